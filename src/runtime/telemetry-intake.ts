/**
 * The one narrow intake of telemetry and request outcomes: samples into the node actor, its
 * EWMAs back into the routing view; a released request's outcome to its nodes' actors (failures
 * towards ejection, successes as proof of life) and its latency into their EWMAs. Telemetry
 * samples are not lifecycle facts: they keep this direct path, off the statechart.
 */
import { suspectAfterMs } from '../../machines/node.machine.js';
import type { NodeActorRef } from '../../machines/swarm.machine.js';
import type { CheckedOutcome } from '../core/arguments.js';
import type { NodeTelemetry } from '../core/types.js';
import { telemetryEntry } from './plain.js';
import type { SwarmView } from './swarm-view.js';
import type { TelemetrySample, TimeSource } from './types.js';

/** How often, at most, reports and releases restart a watched node's detector wait (ms of the swarm's clock); a tenth of the wait when that is shorter. */
export const SEEN_EVERY_MS = 50;

export class TelemetryIntake {
  /** Node actor → until when reports and releases do not restart its wait (a heartbeat's is the actor's own). */
  private readonly lastSeen = new WeakMap<NodeActorRef, number>();

  constructor(
    private readonly view: SwarmView,
    private readonly clock: TimeSource,
    private readonly failurePenaltyMs: number,
  ) {}

  /**
   * A sample into the node actor, then its EWMAs back into the table. A sample the actor refuses
   * (or a down node) leaves the table as it was.
   */
  ingest(nodeId: string, sample: TelemetrySample, ref = this.view.ref(nodeId), current = this.view.table.nodes[nodeId] as NodeTelemetry): NodeTelemetry {
    if (ref === undefined || !current.alive) return current;
    const before = ref.getSnapshot();
    ref.send({ type: 'node.telemetry', sample });
    const after = ref.getSnapshot();
    if (after === before) return current;
    // The node actor owns the EWMAs: its effective values, read back into a frozen table entry.
    const next = telemetryEntry(after.context, current);
    this.view.table.put(nodeId, next);
    return next;
  }

  /**
   * A proof of life of a watched node: restarts its detector's wait, brings it back from a detector
   * down or suspicion. A node being watched has its wait restarted at most every
   * {@link SEEN_EVERY_MS} (or a tenth of its wait, if shorter) this way (a heartbeat always restarts it): at hundreds of releases a
   * second, re-entering the state and rescheduling its timer each time was a tenth of the router's
   * work (docs/detection.md), and a wait of seconds started up to that much earlier is the same wait.
   */
  seen(ref: NodeActorRef): void {
    const now = this.clock.now();
    const until = this.lastSeen.get(ref) ?? now;
    // Within its window (at most SEEN_EVERY_MS ahead, whatever the clock did) and still watching: skipped.
    if (now < until && until - now <= SEEN_EVERY_MS && ref.getSnapshot().value === 'watching') return;
    // A tenth of a short wait at most (fast heartbeats): proofs of life well within it keep the node unsuspected.
    this.lastSeen.set(ref, now + Math.min(SEEN_EVERY_MS, suspectAfterMs(ref.getSnapshot().context) / 10));
    ref.send({ type: 'node.seen', at: now });
  }

  /**
   * A released request's outcome, checked already, for the nodes it held: to their actors, and
   * its latency into their EWMAs (split in proportion to their latency estimates, through the
   * release window). A failure is a signal too: otherwise a fail-fast node looks idle, hence
   * cheapest, until the monitor marks it down. The named node pays; when none is named, every
   * node of the route. A busy node (at capacity) gets only the failure penalty into its latency,
   * so routing leaves it a while; a neutral outcome, nothing.
   */
  released(held: readonly string[], outcome: CheckedOutcome, now: number): void {
    const { latencyMs, ok, failedNode, neutral, busyNode } = outcome;
    // Busy: one of `held`, or gone from the swarm (release-check.ts), when ingest leaves it be.
    if (busyNode !== undefined) this.ingest(busyNode, { latencyMs: this.failurePenaltyMs });
    if (neutral) return;
    const table = this.view.table;
    this.feedOutcome(held, ok === false, failedNode);
    if (ok !== false && table.waits.size > 0) table.answered(held, now);
    const live = held.filter((n) => table.get(n)?.alive === true);
    if (ok === false) {
      const penalty = Math.max(latencyMs ?? 0, this.failurePenaltyMs);
      for (const n of live) if (failedNode === undefined || n === failedNode) this.ingest(n, { latencyMs: penalty });
    } else if (latencyMs !== undefined) {
      const estimates = live.map((n) => table.get(n)?.latencyMs ?? 0);
      const total = estimates.reduce((s, x) => s + x, 0);
      live.forEach((n, i) => {
        const share = total > 0 ? (estimates[i] ?? 0) / total : 1 / live.length;
        for (const fed of this.view.sampler.sample(n, latencyMs * share, now)) this.ingest(n, { latencyMs: fed });
      });
    }
  }

  /**
   * A released request's outcome, to its nodes' actors: a failure counts towards ejection (on the
   * named node, else on every node of the route); a success is a proof of life and clears the
   * failure count (sent only where there is one to clear, as releases are frequent).
   */
  private feedOutcome(held: readonly string[], failed: boolean, failedNode: string | undefined): void {
    if (failed) {
      for (const n of failedNode !== undefined ? [failedNode] : held) {
        if (held.includes(n)) this.view.ref(n)?.send({ type: 'node.outcome', ok: false });
      }
      return;
    }
    for (const n of held) {
      const ref = this.view.ref(n);
      if (ref === undefined) continue;
      if (this.view.watched.has(n)) this.seen(ref);
      const ctx = ref.getSnapshot().context;
      if (ctx.health.failures > 0 || ctx.health.probation) ref.send({ type: 'node.outcome', ok: true });
    }
  }
}
