/**
 * A fake KV bucket of replica announcements for unit tests without NATS: its watch delivers what
 * `push` and `remove` say, every put (this replica's announcements) is kept in `puts`, and its
 * snapshot is what `snapshot` put.
 */
import type { KV, KvWatchEntry } from '@nats-io/kv';
import type { ReplicaProgress } from '../../src/replication/replica-progress.js';

/** A KV bucket of announcements whose watch delivers what `push` and `remove` say. */
export function fakeKv() {
  const queue: KvWatchEntry[] = [];
  let wake: (() => void) | undefined;
  const deliver = (e: Partial<KvWatchEntry>) => {
    queue.push(e as KvWatchEntry);
    wake?.();
  };
  const watch = {
    stop: () => undefined,
    async *[Symbol.asyncIterator]() {
      for (;;) {
        while (queue.length > 0) yield queue.shift() as KvWatchEntry;
        await new Promise<void>((r) => (wake = r));
      }
    },
  };
  const puts: unknown[] = [];
  let held: string | undefined;
  const get = async (k: string) => (k === 'snapshot' && held !== undefined ? { operation: 'PUT', length: held.length, json: () => JSON.parse(held as string) as unknown } : null);
  const kv = { watch: async () => watch, get, put: async (_k: string, v: string) => (puts.push(JSON.parse(v)), 0), delete: async () => undefined } as unknown as KV;
  const entry = (p: object) => JSON.stringify(p);
  return {
    kv,
    puts,
    push: (p: ReplicaProgress | (Record<string, unknown> & { replica: string })) => deliver({ key: `applied.${String(p.replica)}`, operation: 'PUT', length: entry(p).length, json: <T>() => JSON.parse(entry(p)) as T }),
    /** Puts `value` as the bucket's snapshot (what `get('snapshot')` answers). */
    snapshot: (value: object) => void (held = JSON.stringify(value)),
    remove: (replica: string) => deliver({ key: `applied.${replica}`, operation: 'DEL', length: 0 }),
  };
}
