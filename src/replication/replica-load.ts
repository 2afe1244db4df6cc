/**
 * A replica's end of the shared load signal (docs/replication.md, "Shared load"): its load channel
 * on `hecate.<swarm>.load`, signed with the swarm secret when the replica has one (docs/security.md,
 * "NATS"), attached to the local Swarm's in-flight counts once it is built.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { systemClock } from '../runtime/clock.js';
import type { Clock } from '../runtime/types.js';
import { kInternals } from '../runtime/internal.js';
import type { Swarm } from '../runtime/swarm.js';
import type { ConnectSwarmOptions } from './connect-options.js';
import { LoadChannel, natsLoadTransport } from './load-channel.js';
import type { LogSigner } from './log-signer.js';
import { signedLoadTransport } from './signed-load-transport.js';

/** What the other replicas hold, as this one merged it. */
export interface SharedLoad {
  readonly replicas: readonly string[];
  readonly inflight: Readonly<Record<string, number>>;
}

/** One replica's load channel, and what it dropped for its signature or age. */
export class ReplicaLoad {
  readonly channel: LoadChannel;
  private readonly dropped: () => number;

  /** @param floor the log's floor: announcements are signed once it is 2 (signed-load-transport.ts) */
  constructor(nc: NatsConnection, swarm: string, replicaId: string, epoch: string, io: Clock, options: ConnectSwarmOptions, signer: LogSigner | undefined, connected: () => boolean, floor?: () => number) {
    const plain = natsLoadTransport(nc, swarm);
    const signed = signer === undefined ? undefined : signedLoadTransport(plain, signer, options.wallClock ?? systemClock, floor);
    this.dropped = signed?.rejected ?? (() => 0);
    this.channel = new LoadChannel({ replicaId, epoch, io, transport: signed ?? plain, connected, ...(options.loadAnnounceMs !== undefined ? { announceMs: options.loadAnnounceMs } : {}), ...(options.loadHoldMs !== undefined ? { holdMs: options.loadHoldMs } : {}) });
  }

  /** The local Swarm's in-flight counts go out on the channel; the others' come in. */
  attach(swarm: Swarm): void {
    this.channel.attach(swarm[kInternals].load);
    swarm.on('node.joined', (e) => this.channel.joined(e.nodeId));
  }

  /** Announcements dropped: not signed with the swarm secret, or signed too far from now. */
  rejected(): number {
    return this.dropped();
  }

  /** The other replicas' reservations merged here (those gone silent past their hold dropped first). */
  shared(): SharedLoad {
    const merged = this.channel.merged;
    merged.expire();
    return { replicas: merged.replicas(), inflight: Object.fromEntries(merged.entries()) };
  }
}
