/**
 * Forgetting members (docs/replication.md, "Compaction"): a member down and unheard for
 * `forgetAfterMs` is removed through the log (`node.removed`, with the basis of the node's last
 * entry, so a node heard or changed meanwhile is not removed, and two replicas forgetting it apply
 * one removal).
 */
import type { Swarm } from '../runtime/swarm.js';
import type { Clock } from '../runtime/types.js';

/** What forgetting needs of the replica. */
export interface ForgettingHost {
  readonly io: Clock;
  readonly forgetAfterMs: number;
  /** The local Swarm, if built and the replica is connected (only then is a silence news). */
  swarm(): Swarm | undefined;
  /** Proposes removing `nodeId`, decided on the node's entry at `basis`. */
  forget(nodeId: string): void;
}

/** When each member was last heard of, and the sweep that forgets the long-silent down ones. */
export class MemberForgetting {
  private readonly lastHeard = new Map<string, number>();
  private readonly since: number;
  private timer: unknown;

  constructor(private readonly host: ForgettingHost) {
    this.since = host.io.now();
  }

  /** A heartbeat of, or an entry on, `nodeId`. */
  heard(nodeId: string): void {
    this.lastHeard.set(nodeId, this.host.io.now());
  }

  /** Sweeps every `min(forgetAfterMs / 2, 30 s)` until {@link MemberForgetting.stop}. */
  start(): void {
    const every = Math.max(Math.min(this.host.forgetAfterMs / 2, 30_000), 10);
    const tick = () => {
      this.sweep();
      this.timer = this.host.io.setTimeout(tick, every);
    };
    this.timer = this.host.io.setTimeout(tick, every);
  }

  stop(): void {
    this.host.io.clearTimeout(this.timer as never);
  }

  /** Proposes the removal of every member down and unheard (since this replica started, at the earliest) for `forgetAfterMs`. */
  sweep(): void {
    const swarm = this.host.swarm();
    if (swarm === undefined) return;
    const old = this.host.io.now() - this.host.forgetAfterMs;
    for (const id of Object.keys(swarm.state().nodes)) {
      if (swarm.node(id)?.state === 'down' && (this.lastHeard.get(id) ?? this.since) <= old) this.host.forget(id);
    }
    for (const id of this.lastHeard.keys()) if (swarm.node(id) === undefined) this.lastHeard.delete(id);
  }
}
