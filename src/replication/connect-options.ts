/**
 * The options of `connectSwarm` (docs/replication.md), checked before anything connects, and the
 * names they derive: the swarm's stream and subjects, a replica's random name.
 */
import type { NodeProfile } from '../core/types.js';
import type { Clock, SwarmConfig, SwarmOptions, TimeSource } from '../runtime/types.js';
import { natsAccessIssue, type NatsAccess } from './nats-access.js';

/** Options of `connectSwarm`. */
export interface ConnectSwarmOptions {
  /** NATS server URL(s), e.g. `nats://127.0.0.1:4222`. */
  readonly servers: string | readonly string[];
  /** The swarm's name (letters, digits, `-`, `_`): its stream is `HECATE_<name>`, its subjects `hecate.<name>.*`. */
  readonly swarm: string;
  /**
   * The genesis, used only when the swarm's log is new: the profiles, config and id seed every
   * replica builds from. A log that has one already wins. Without them a replica waits for
   * another to write the genesis (up to `connectTimeoutMs`).
   */
  readonly profiles?: readonly NodeProfile[];
  readonly config?: SwarmConfig;
  /** @defaultValue 1 */
  readonly seed?: number;
  /** The local Swarm's clock (detector, leases, bans). @defaultValue systemClock */
  readonly clock?: Clock;
  /** An XState inspection observer for the local Swarm. */
  readonly inspect?: SwarmOptions['inspect'];
  /** The local Swarm's prefix-cache index, `prefixCache()` of `hecate-swarm/prefix` (local like its leases). @defaultValue none */
  readonly prefixCache?: SwarmOptions['prefixCache'];
  /** The rebalancer, `rebalancer()` of `hecate-swarm/rebalance`: `rebalance()` then commits its moves through the log (format version 3, needs `secret`). @defaultValue none */
  readonly rebalancer?: SwarmOptions['rebalancer'];
  /** This replica's name in proposal ids. @defaultValue a random one */
  readonly replicaId?: string;
  /** How long a lifecycle call keeps trying to put its proposal on the log before `Disconnected`. @defaultValue 10000 */
  readonly proposeTimeoutMs?: number;
  /** How long connecting may wait for the server, the genesis and catching up. @defaultValue 30000 */
  readonly connectTimeoutMs?: number;
  /** After a reconnect, how long heartbeats have to come back before this replica re-proposes its detector's downs. @defaultValue 3000 */
  readonly reconcileAfterMs?: number;
  /** The clock of network waits (retries, timeouts, reconciling). @defaultValue systemClock */
  readonly ioClock?: Clock;
  /**
   * Saves the swarm's snapshot in the KV bucket `hecate_<name>` after every this many log
   * entries, and starts from the stored one (replaying only the entries after it); 0: neither,
   * a replica always replays the whole log. @defaultValue 500
   */
  readonly snapshotEvery?: number;
  /**
   * Compaction: after storing a snapshot, a replica trims the stream below the least sequence any
   * live replica applied (and the snapshot's), keeping this many entries below it; so the stream
   * holds about `snapshotEvery + trimMargin` entries. Needs snapshots (`snapshotEvery > 0`).
   * @defaultValue 500
   */
  readonly trimMargin?: number;
  /** A replica whose applied sequence was not announced for this long stops holding the trim back (its announcement is dropped). Replicas announce every `min(5000, replicaGraceMs / 4)` ms. @defaultValue 60000 */
  readonly replicaGraceMs?: number;
  /** A member down and unheard (no heartbeat, no entry on it) for this long is removed through the log (`node.removed`); 0: never. @defaultValue 0 */
  readonly forgetAfterMs?: number;
  /** Copies of the stream and of the snapshot bucket on a NATS cluster (1-5), when this replica creates them. @defaultValue 1 */
  readonly streamReplicas?: number;
  /** Credentials and TLS of the NATS connection (docs/security.md, "NATS"). @defaultValue none */
  readonly nats?: NatsAccess;
  /**
   * The swarm secret (at least 32 characters; `serve`: the `--token-file`'s text). With it, every
   * log entry, KV snapshot, heartbeat and progress announcement this replica writes is signed
   * (format version 2), and it applies only what is signed with the same secret: a client of the
   * NATS server without it cannot change the swarm. Every replica of a swarm gives the same
   * secret, or none (docs/replication.md, "Signed entries"). @defaultValue none: nothing signed, nothing checked
   */
  readonly secret?: Uint8Array | string;
  /** The wall clock entries and heartbeats are signed and checked with (not `clock`, which a test may hold still). @defaultValue systemClock */
  readonly wallClock?: TimeSource;
  /**
   * Share the load signal: announce this replica's open reservations on `hecate.<swarm>.load` and
   * price the others' with its own (docs/replication.md, "Shared load"). @defaultValue true
   */
  readonly shareLoad?: boolean;
  /** The load announcements' coalescing window, ms. @defaultValue 2 */
  readonly loadAnnounceMs?: number;
  /** How long the others count this replica's reservations after its last announcement, ms (it announces every `loadHoldMs / 4` while it holds any). @defaultValue 2000 */
  readonly loadHoldMs?: number;
}

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** What is wrong with the options, or undefined. */
export function connectOptionsIssue(o: ConnectSwarmOptions): string | undefined {
  if (o === null || typeof o !== 'object') return 'options must be an object { servers, swarm, profiles?, config?, … }';
  const servers = typeof o.servers === 'string' ? [o.servers] : o.servers;
  if (!Array.isArray(servers) || servers.length === 0 || !servers.every((s) => typeof s === 'string')) return 'option "servers" must be a NATS URL or a non-empty array of them';
  if (typeof o.swarm !== 'string' || !NAME.test(o.swarm)) return `option "swarm" must be 1-64 letters, digits, "-" or "_", got ${String(o.swarm)}`;
  if ((o.profiles === undefined) !== (o.config === undefined)) return 'options "profiles" and "config" go together: both (a genesis for a new log) or neither';
  if (o.seed !== undefined && !Number.isInteger(o.seed)) return `option "seed" must be an integer, got ${String(o.seed)}`;
  if (o.replicaId !== undefined && (typeof o.replicaId !== 'string' || !NAME.test(o.replicaId))) return `option "replicaId" must be 1-64 letters, digits, "-" or "_", got ${String(o.replicaId)}`;
  if (o.snapshotEvery !== undefined && !(Number.isInteger(o.snapshotEvery) && o.snapshotEvery >= 0)) return `option "snapshotEvery" must be an integer >= 0 (0: no snapshots), got ${String(o.snapshotEvery)}`;
  if (o.trimMargin !== undefined && !(Number.isInteger(o.trimMargin) && o.trimMargin >= 0)) return `option "trimMargin" must be an integer >= 0, got ${String(o.trimMargin)}`;
  if (o.streamReplicas !== undefined && !(Number.isInteger(o.streamReplicas) && o.streamReplicas >= 1 && o.streamReplicas <= 5)) return `option "streamReplicas" must be an integer from 1 to 5, got ${String(o.streamReplicas)}`;
  if (o.replicaGraceMs !== undefined && !(typeof o.replicaGraceMs === 'number' && Number.isFinite(o.replicaGraceMs) && o.replicaGraceMs > 0)) return `option "replicaGraceMs" must be a finite number of ms > 0, got ${String(o.replicaGraceMs)}`;
  if (o.secret !== undefined && !((typeof o.secret === 'string' || o.secret instanceof Uint8Array) && o.secret.length >= 32)) return 'option "secret" must be a string or bytes of at least 32 characters (the swarm secret)';
  const access = natsAccessIssue(o.nats);
  if (access !== undefined) return access;
  if (o.shareLoad !== undefined && typeof o.shareLoad !== 'boolean') return `option "shareLoad" must be true or false, got ${String(o.shareLoad)}`;
  if (o.loadHoldMs !== undefined && !(typeof o.loadHoldMs === 'number' && Number.isFinite(o.loadHoldMs) && o.loadHoldMs >= 4 && o.loadHoldMs <= 60_000)) return `option "loadHoldMs" must be a number of ms from 4 to 60000, got ${String(o.loadHoldMs)}`;
  for (const key of ['loadAnnounceMs', 'proposeTimeoutMs', 'connectTimeoutMs', 'reconcileAfterMs', 'forgetAfterMs'] as const) {
    const v = o[key];
    if (v !== undefined && !(typeof v === 'number' && Number.isFinite(v) && v >= 0)) return `option "${key}" must be a finite number of ms >= 0, got ${String(v)}`;
  }
  return undefined;
}

/** A random name: 10 base-36 characters from the platform's random source. */
export function randomName(): string {
  const bytes = new Uint8Array(8);
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => (b % 36).toString(36)).join('');
}
