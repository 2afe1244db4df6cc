/**
 * Where every agent of a replicated swarm listens, shared by the orchestrators of
 * `hecate-node serve --nats` (docs/serve.md): a JetStream KV bucket `hecate-<swarm>-agents`, one
 * key per agent. An agent joins one orchestrator, which puts its profile and URL here; every
 * orchestrator watches the bucket, so it can call an agent that joined another one (or joined
 * before it started). The same connection listens to the swarm's heartbeat subject, so an
 * orchestrator hears every agent, whichever orchestrator it heartbeats to. Not part of the
 * subpath's API: `src/orchestrator` loads it, here because only src/replication loads NATS.
 */
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { NodeProfile } from '../core/types.js';
import { systemClock } from '../runtime/clock.js';
import type { TimeSource } from '../runtime/types.js';
import { HeartbeatCodec } from './heartbeat-codec.js';
import { LogSigner } from './log-signer.js';
import { connectNats, type NatsAccess } from './nats-access.js';

/** One agent as the directory holds it. */
export interface DirectoryEntry {
  readonly profile: NodeProfile;
  /** Its stage server's base URL. */
  readonly url: string;
}

/** An entry as the bucket holds it with the swarm secret: signed at `at` (the writer's wall clock). */
type SignedDirectoryEntry = DirectoryEntry & { readonly at?: number; readonly sig?: string };

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
  /** Credentials and TLS of the NATS connection. */
  readonly nats?: NatsAccess;
  /**
   * The swarm secret: entries are signed, and only entries and heartbeats signed with it are
   * taken (docs/security.md, "NATS"); an entry older than the one held for its id is ignored.
   */
  readonly secret?: Uint8Array | string;
  /** Signs and checks with this wall clock. @defaultValue systemClock */
  readonly wallClock?: TimeSource;
  /**
   * The swarm log's format floor (`stats().floor`): while it is 1 (an upgrade window,
   * docs/replication.md, "Upgrades"), unsigned entries and heartbeats (an orchestrator without the
   * secret) are taken too; once it is 2, the entries taken unsigned are dropped (`onChange(id,
   * undefined)`, counted in `rejected()`) at the next entry or heartbeat. @defaultValue 2: signed only
   */
  floor?(): number;
}

/** The shared directory of one swarm's agents. */
export interface AgentDirectory {
  /** Records (or replaces) an agent's entry. */
  put(entry: DirectoryEntry): Promise<void>;
  /** Removes an agent (it left). */
  remove(id: string): Promise<void>;
  /** Stops watching and listening, and closes its connection. */
  close(): Promise<void>;
  /** Entries and heartbeats dropped for their signature or age (with the swarm secret). */
  rejected(): number;
  /**
   * Entries alone dropped: what a replicated swarm on the same connection does not count already
   * (its log stream reads the same heartbeat subject and counts the heartbeats it drops).
   */
  rejectedEntries(): number;
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
  const nc: NatsConnection = await connectNats(options.servers, options.nats);
  const signer = options.secret === undefined ? undefined : new LogSigner(options.secret, options.swarm);
  const wall = options.wallClock ?? systemClock;
  const floor = options.floor ?? (() => 2);
  const codec = new HeartbeatCodec(signer, wall, floor);
  const signedAt = new Map<string, number>();
  /** Ids whose entry was taken unsigned (the upgrade window): dropped once the log is signed. */
  const unsigned = new Set<string>();
  let rejected = 0;
  /** Once the log's floor is 2, the entries taken unsigned go as if their agents left (looked at on each entry and heartbeat). */
  const sealed = () => {
    if (unsigned.size === 0 || floor() < 2) return;
    for (const id of unsigned) {
      rejected++;
      options.onChange(id, undefined);
    }
    unsigned.clear();
  };
  /** The entry a put holds, or undefined when it is not signed with the secret or older than the one held. */
  const take = (id: string, value: SignedDirectoryEntry): DirectoryEntry | undefined => {
    if (signer === undefined) return value;
    if (value.sig === undefined && floor() < 2 && value.profile?.id === id) {
      unsigned.add(id); // the upgrade window
      return { profile: value.profile, url: value.url };
    }
    const at = value.at;
    if (!signer.verify('directory', value) || typeof at !== 'number' || at < (signedAt.get(id) ?? -Infinity) || value.profile?.id !== id) {
      rejected++;
      return undefined; // an entry taken unsigned stays marked: a bad signature must not keep it past the seal
    }
    unsigned.delete(id);
    signedAt.set(id, at);
    return { profile: value.profile, url: value.url };
  };
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
        sealed();
        const id = keyToId(e.key);
        if (e.operation !== 'PUT') unsigned.delete(id);
        if (e.operation === 'PUT') {
          let value: SignedDirectoryEntry | undefined;
          try {
            value = e.json<SignedDirectoryEntry>();
          } catch {
            value = undefined;
          }
          const entry = value !== undefined && value !== null && typeof value === 'object' ? take(id, value) : undefined;
          if (entry !== undefined) options.onChange(id, entry);
          else if (value === undefined && signer !== undefined) rejected++;
        } else options.onChange(id, undefined);
        if (e.delta === 0 || e.isUpdate) markReady();
      }
    })();
    await ready;
    const onHeartbeat = options.onHeartbeat;
    if (onHeartbeat !== undefined) {
      heartbeats = nc.subscribe(`hecate.${options.swarm}.hb`, {
        callback: (error, msg) => {
          sealed();
          const id = error === null ? codec.decode(msg.string()) : undefined;
          if (id !== undefined) onHeartbeat(id);
        },
      });
    }
    return {
      async put(entry) {
        const value = signer !== undefined ? signer.signed('directory', { ...entry, at: wall.now() }) : entry;
        await kv.put(idToKey(entry.profile.id), JSON.stringify(value));
      },
      rejected: () => rejected + codec.rejected,
      rejectedEntries: () => rejected,
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
