/**
 * Where every agent of a replicated swarm listens, shared by its orchestrators: a JetStream KV
 * bucket `hecate-<swarm>-agents`, one key per agent. An agent joins one orchestrator, which puts
 * its profile and URL here; every orchestrator watches the bucket, so it can call an agent that
 * joined another one (or joined before it started). Loaded only with `--nats`.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm, type KV } from '@nats-io/kv';
import type { NodeProfile } from '../core/types.js';

/** One agent as the directory holds it. */
export interface DirectoryEntry {
  readonly profile: NodeProfile;
  /** Its stage server's base URL. */
  readonly url: string;
}

/** The shared directory of one swarm's agents. */
export interface AgentDirectory {
  /** Resolves once every entry the bucket held when it was opened has been delivered. */
  readonly ready: Promise<void>;
  /** Records (or replaces) an agent's entry. */
  put(entry: DirectoryEntry): Promise<void>;
  /** Removes an agent (it left). */
  remove(id: string): Promise<void>;
  /** Stops watching (the connection stays open: it is the caller's). */
  close(): void;
}

/** The bucket of swarm `swarm`. */
export function directoryBucket(swarm: string): string {
  return `hecate-${swarm}-agents`;
}

/**
 * Opens (creating if needed) the directory of `swarm` and calls `onChange` for every entry in it,
 * then for every change: `(id, entry)` on a put, `(id, undefined)` when the agent left.
 */
export async function openAgentDirectory(nc: NatsConnection, swarm: string, onChange: (id: string, entry: DirectoryEntry | undefined) => void): Promise<AgentDirectory> {
  const kv: KV = await new Kvm(nc).create(directoryBucket(swarm), { history: 1 });
  const empty = (await kv.status()).values === 0;
  const watch = await kv.watch();
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  if (empty) markReady();
  void (async () => {
    for await (const e of watch) {
      const id = keyToId(e.key);
      if (e.operation === 'PUT') onChange(id, e.json<DirectoryEntry>());
      else onChange(id, undefined);
      if (e.delta === 0 || e.isUpdate) markReady();
    }
  })();
  return {
    ready,
    async put(entry) {
      await kv.put(idToKey(entry.profile.id), JSON.stringify(entry));
    },
    async remove(id) {
      await kv.delete(idToKey(id));
    },
    close() {
      watch.stop();
    },
  };
}

/** An agent id (letters, digits, `.`, `_`, `:`, `-`) as a KV key: base64url, which KV keys allow. */
export function idToKey(id: string): string {
  return Buffer.from(id, 'utf8').toString('base64url');
}

/** The inverse of {@link idToKey}. */
export function keyToId(key: string): string {
  return Buffer.from(key, 'base64url').toString('utf8');
}
