/**
 * Which public key each agent id belongs to (docs/security.md, "Agent keys"): bound on the id's
 * first signed join, kept when the node leaves or is forgotten, removed only by the admin call.
 */

/** Agent id → its public key (base64url), for as long as the orchestrator runs. */
export class KeyBindings {
  private readonly keys = new Map<string, string>();

  /** The key `id` is bound to, if any. */
  keyOf(id: string): string | undefined {
    return this.keys.get(id);
  }

  /** Binds `id` to `publicKey` unless it is bound already; true when it is `publicKey`'s now. */
  claim(id: string, publicKey: string): boolean {
    const bound = this.keys.get(id);
    if (bound === undefined) {
      this.keys.set(id, publicKey);
      return true;
    }
    return bound === publicKey;
  }

  /** Removes `id`'s binding; true when there was one. */
  release(id: string): boolean {
    return this.keys.delete(id);
  }

  /** Ids bound now. */
  get size(): number {
    return this.keys.size;
  }
}
