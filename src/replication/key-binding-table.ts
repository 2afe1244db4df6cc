/**
 * The agent id → public key bindings of a replicated swarm (docs/replication.md, "Key
 * bindings"): applied from the log's `swarm.binding` entries in stream order, so every replica
 * holds the same table, and kept in the KV snapshot, so they survive compaction. The first bind of
 * an id wins; a bind of an id bound to another key changes nothing; only an unbind (`key: null`)
 * frees it.
 */

/** What applying a binding entry did. */
export type BindingOutcome =
  /** A bind: whether the id is bound to the key asked now (false: another key had it), and the key it is bound to. */
  | { readonly bound: boolean; readonly key: string }
  /** An unbind: whether there was a binding to remove. */
  | { readonly removed: boolean };

/** The replicated bindings, one per id. */
export class KeyBindingTable {
  private readonly keys = new Map<string, string>();

  /** The key `id` is bound to, if any. */
  keyOf(id: string): string | undefined {
    return this.keys.get(id);
  }

  /** Applies a binding entry: `key` binds `id` unless bound already; `null` frees it. */
  apply(id: string, key: string | null): BindingOutcome {
    if (key === null) return { removed: this.keys.delete(id) };
    const bound = this.keys.get(id);
    if (bound !== undefined) return { bound: bound === key, key: bound };
    this.keys.set(id, key);
    return { bound: true, key };
  }

  /** Every binding, sorted by id (a snapshot's bytes do not depend on the order they were made in). */
  entries(): [string, string][] {
    return [...this.keys].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  }

  /** Replaces the table with a snapshot's. */
  restore(entries: readonly (readonly [string, string])[] | undefined): void {
    this.keys.clear();
    for (const [id, key] of entries ?? []) if (typeof id === 'string' && typeof key === 'string') this.keys.set(id, key);
  }

  get size(): number {
    return this.keys.size;
  }
}
