/**
 * Where every agent of a replicated swarm listens, shared by the orchestrators of
 * `hecate-node serve --nats` (docs/serve.md): a JetStream KV bucket `hecate-<swarm>-agents`, one
 * key per agent. An agent joins one orchestrator, which puts its profile and URL here; every
 * orchestrator watches the bucket, so it can call an agent that joined another one (or joined
 * before it started). The same connection listens to the swarm's heartbeat subject, so an
 * orchestrator hears every agent, whichever orchestrator it heartbeats to. Not part of the
 * subpath's API: `src/serve` loads it, here because only src/replication loads NATS.
 */
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { NodeProfile } from '../core/types.js';

/** One agent as the directory holds it. */
export interface DirectoryEntry {
  readonly profile: NodeProfile;
  /** Its stage server's base URL. */
  readonly url: string;
}

/** Options of {@link openAgentDirectory}. */
export interface AgentDirectoryOptions {
  /** NATS server URLs. */
  readonly servers: readonly string[];
  /** The swarm's name (as `connectSwarm`'s). */
  readonly swarm: string;
  /** Every entry the bucket holds when opened, then every change: `(id, entry)` on a put, `(id, undefined)` when the agent left. */
  onChange(id: string, entry: DirectoryEntry | undefined): void;
  /** A heartbeat of node `id` on the swarm's heartbeat subject (`hecate.<swarm>.hb`), from any replica. */
  onHeartbeat?(id: string): void;
}

/** The shared directory of one swarm's agents. */
export interface AgentDirectory {
  /** Records (or replaces) an agent's entry. */
  put(entry: DirectoryEntry): Promise<void>;
  /** Removes an agent (it left). */
  remove(id: string): Promise<void>;
  /** Stops watching and listening, and closes its connection. */
  close(): Promise<void>;
}

/** The bucket of swarm `swarm`. */
export function directoryBucket(swarm: string): string {
  return `hecate-${swarm}-agents`;
}

/**
 * Connects, opens (creating if needed) the directory of `options.swarm`, and resolves once every
 * entry the bucket held has gone to `onChange`; changes follow as they come.
 */
export async function openAgentDirectory(options: AgentDirectoryOptions): Promise<AgentDirectory> {
  const { connect } = await import('@nats-io/transport-node');
  const nc: NatsConnection = await connect({ servers: [...options.servers], maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  let heartbeats: Subscription | undefined;
  try {
    const kv: KV = await new Kvm(nc).create(directoryBucket(options.swarm), { history: 1 });
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
        if (e.operation === 'PUT') options.onChange(id, e.json<DirectoryEntry>());
        else options.onChange(id, undefined);
        if (e.delta === 0 || e.isUpdate) markReady();
      }
    })();
    await ready;
    const onHeartbeat = options.onHeartbeat;
    if (onHeartbeat !== undefined) heartbeats = nc.subscribe(`hecate.${options.swarm}.hb`, { callback: (error, msg) => (error === null ? onHeartbeat(msg.string()) : undefined) });
    return {
      async put(entry) {
        await kv.put(idToKey(entry.profile.id), JSON.stringify(entry));
      },
      async remove(id) {
        await kv.delete(idToKey(id));
      },
      async close() {
        heartbeats?.unsubscribe();
        watch.stop();
        await nc.close();
      },
    };
  } catch (error) {
    await nc.close();
    throw error;
  }
}

/** An agent id (letters, digits, `.`, `_`, `:`, `-`) as a KV key: base64url, which KV keys allow. */
export function idToKey(id: string): string {
  return Buffer.from(id, 'utf8').toString('base64url');
}

/** The inverse of {@link idToKey}. */
export function keyToId(key: string): string {
  return Buffer.from(key, 'base64url').toString('utf8');
}
