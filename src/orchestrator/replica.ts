/**
 * The orchestrator as one of several on a replicated swarm (`serve --nats URL --swarm NAME`,
 * docs/serve.md): a replica of `hecate-swarm/replication` (the log of membership and lifecycle
 * events, heartbeats on a core subject, so its node actors hear every agent, whichever
 * orchestrator it talks to) and the shared agent directory (a KV bucket of addresses).
 * Loaded only with `--nats`: the NATS packages are optional.
 */
import type { NodeProfile } from '../core/types.js';
import type { AgentDirectory, DirectoryEntry } from '../replication/agent-directory.js';
import type { NatsAccess } from '../replication/nats-access.js';
import type { SharedTrust } from './auth/orchestrator-guard.js';
import type { NonceBucket } from '../replication/nonce-bucket.js';
import { DEFAULT_MAX_SKEW_MS } from '../wire/request-signing.js';
import type { ReplicatedSwarm, ReplicationStatus } from '../replication/index.js';
import { prefixCache } from '../prefix/index.js';
import type { PrefixPlugin } from '../runtime/prefix-hook.js';
import type { KvShare } from './kv-share.js';
import type { Swarm } from '../runtime/swarm.js';
import type { SwarmContract } from '../runtime/swarm-contract.js';
import type { RebalancerPlugin } from '../runtime/rebalance-hook.js';
import type { Clock, SwarmConfig } from '../runtime/types.js';

/** Options of {@link startReplica}. */
export interface ReplicaOptions {
  readonly servers: readonly string[];
  readonly swarm: string;
  /** Credentials and TLS of the NATS connections. */
  readonly nats?: NatsAccess;
  /** The swarm secret: the log, snapshots, heartbeats and the directory are signed with it, and only what is signed is taken (docs/security.md, "NATS"). */
  readonly secret?: Uint8Array;
  /** A log entry, heartbeat or directory entry was dropped for its signature (with `secret`). */
  onRejected?(why: string): void;
  /** The declared nodes: the genesis, when this orchestrator is the first on a new log. */
  readonly nodes: readonly NodeProfile[];
  readonly config: SwarmConfig;
  readonly clock: Clock;
  /** The prefix-cache plug-in (the orchestrator's, precise mode's). @defaultValue `prefixCache()` */
  readonly prefixCache?: PrefixPlugin;
  /** Shares the agents' KV reports with the other replicas over the load channel (kv-share.ts). */
  readonly kvShare?: KvShare;
  /** `serve --rebalance`: the rebalancer, its moves committed through the log. */
  readonly rebalancer?: RebalancerPlugin;
  /** An agent's directory entry, as it is now and on every change (`undefined`: it left). */
  onAgent(id: string, entry: DirectoryEntry | undefined): void;
}

/** A started replica: the swarm through the log, its local copy for sessions, the agent directory. */
export interface Replica {
  /** The replicated swarm: reads and routing local, lifecycle commands resolving once the log applies them. */
  readonly swarm: SwarmContract<'log'>;
  /** This replica's local Swarm, the one sessions run on (never changed directly: only through {@link Replica.swarm}). */
  local(): Swarm;
  readonly directory: AgentDirectory;
  /** Calls `listener` whenever this replica's standing with the log changes. */
  onReplication(listener: (status: ReplicationStatus, applied: number) => void): void;
  /** What `GET /v1/status` shows of the replication. */
  view(): { readonly swarm: string; readonly replica: string; readonly status: ReplicationStatus; readonly applied: number };
  /** This replica's id and lag, and what it dropped for a bad signature (log entries, other messages), for `/metrics`. */
  lag(): { readonly replica: string; readonly lag: number; readonly rejected: number; readonly rejectedMessages: number };
  /**
   * With `secret`: the agent id → key bindings through the log, and the members' nonces in the
   * swarm's nonce bucket: every orchestrator of the swarm holds the same.
   */
  readonly trust: SharedTrust | undefined;
  close(): Promise<void>;
}

/**
 * Connects: catches up with the swarm's log (writing the genesis from `nodes` if the log is new)
 * and loads the agent directory; resolves once both are current, ready to serve.
 */
export async function startReplica(options: ReplicaOptions): Promise<Replica> {
  const { connectSwarm } = await import('../replication/index.js');
  const { openAgentDirectory } = await import('../replication/agent-directory.js');
  const { openNonceBucket } = await import('../replication/nonce-bucket.js');
  const access = { ...(options.nats !== undefined ? { nats: options.nats } : {}), ...(options.secret !== undefined ? { secret: options.secret } : {}) };
  const rs: ReplicatedSwarm = await connectSwarm({ servers: options.servers, swarm: options.swarm, profiles: options.nodes, config: options.config, clock: options.clock, prefixCache: options.prefixCache ?? prefixCache(), ...(options.rebalancer !== undefined ? { rebalancer: options.rebalancer } : {}), ...access });
  if (rs.load !== undefined) options.kvShare?.attach(rs.load.channel);
  const onRejected = options.onRejected;
  if (onRejected !== undefined) rs.on('replication.rejected', (e) => onRejected(e.error.message));
  let directory: AgentDirectory;
  let nonces: NonceBucket | undefined;
  try {
    // Kept as long as a member's timestamp is accepted, behind and ahead (orchestrator-guard.ts).
    if (options.secret !== undefined) nonces = await openNonceBucket({ servers: options.servers, swarm: options.swarm, keepMs: 2 * DEFAULT_MAX_SKEW_MS, ...(options.nats !== undefined ? { nats: options.nats } : {}) });
    // The replica's node actors hear every agent's heartbeats (its own subscription): they own the
    // times. The directory listens too, for what it does on each one: it seals the upgrade
    // window's unsigned entries and counts forged heartbeats (agent-directory.ts).
    directory = await openAgentDirectory({ servers: options.servers, swarm: options.swarm, onChange: options.onAgent, onHeartbeat: () => {}, floor: () => rs.stats().floor, ...access });
  } catch (error) {
    await nonces?.close();
    await rs.close();
    throw error;
  }
  return {
    swarm: rs,
    local: () => rs.swarmReplica,
    directory,
    onReplication(listener) {
      rs.on('replication.changed', (event) => listener(event.status, event.applied));
    },
    view: () => ({ swarm: rs.name, replica: rs.replicaId, status: rs.replication(), applied: rs.stats().applied }),
    lag: () => {
      const stats = rs.stats();
      return { replica: rs.replicaId, lag: stats.lag, rejected: stats.rejected, rejectedMessages: stats.rejectedMessages + directory.rejectedEntries() }; // heartbeats once: the swarm's count has them
    },
    trust:
      nonces === undefined
        ? undefined
        : { swarm: options.swarm, bindings: { keyOf: (id) => rs.keyOf(id), claim: (id, key) => rs.bindKey(id, key), release: (id) => rs.unbindKey(id) }, claimNonce: (nonce) => (nonces as NonceBucket).claim(nonce) },
    async close() {
      await nonces?.close();
      await directory.close();
      await rs.close();
    },
  };
}
