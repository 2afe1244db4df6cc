/**
 * Which public key each agent id belongs to (docs/security.md, "Agent keys"): bound on the id's
 * first signed join the edge admits, kept when the node leaves or is forgotten, removed only by the admin call.
 * Given a file, the bindings are read from it at start and written to it on every change, so they
 * outlive the orchestrator too.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { AuthError } from '../../wire/auth-error.js';

/** Agent id → its public key (base64url). */
export class KeyBindings {
  private readonly keys = new Map<string, string>();

  /**
   * @param file where the bindings are kept (JSON `{ "bindings": { id: key } }`, mode 0600); none: in memory only
   * @throws {AuthError} `StateFile` naming the file when it exists but cannot be read or is not a bindings file
   */
  constructor(private readonly file?: string) {
    if (file === undefined) return;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ENOENT') return;
      throw new AuthError('StateFile', `${file}: cannot read the key bindings (${String((error as { code?: unknown }).code ?? error)})`, { cause: error });
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      throw new AuthError('StateFile', `${file}: the key bindings are not JSON (${(error as Error).message})`, { cause: error });
    }
    const bindings = (json as { bindings?: unknown } | null)?.bindings;
    if (typeof bindings !== 'object' || bindings === null || Array.isArray(bindings)) throw new AuthError('StateFile', `${file}: expected { "bindings": { "<id>": "<public key>" } }`);
    for (const [id, key] of Object.entries(bindings)) {
      if (typeof key !== 'string' || !/^[A-Za-z0-9_-]{43}$/.test(key)) throw new AuthError('StateFile', `${file}: $.bindings.${id}: expected an ed25519 public key (43 base64url characters)`);
      this.keys.set(id, key);
    }
  }

  /** The key `id` is bound to, if any. */
  keyOf(id: string): string | undefined {
    return this.keys.get(id);
  }

  /** Binds `id` to `publicKey` unless it is bound already; true when it is `publicKey`'s now. */
  claim(id: string, publicKey: string): boolean {
    const bound = this.keys.get(id);
    if (bound !== undefined) return bound === publicKey;
    this.keys.set(id, publicKey);
    this.save();
    return true;
  }

  /** Removes `id`'s binding; true when there was one. */
  release(id: string): boolean {
    const removed = this.keys.delete(id);
    if (removed) this.save();
    return removed;
  }

  /** Ids bound now. */
  get size(): number {
    return this.keys.size;
  }

  /** Writes the file whole (beside it, then renamed over it): a crash leaves the old one or the new one. */
  private save(): void {
    if (this.file === undefined) return;
    const sorted = Object.fromEntries([...this.keys].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    const temp = `${this.file}.tmp`;
    writeFileSync(temp, `${JSON.stringify({ bindings: sorted }, null, 2)}\n`, { mode: 0o600 });
    renameSync(temp, this.file);
  }
}
