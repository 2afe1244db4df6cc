import { assign, enqueueActions, setup } from 'xstate';
import { banMs, maxBanLevel, resolveEjectionOptions, shouldEject, type EjectionOptions, type ResolvedEjectionOptions } from '../src/core/ejection.js';
import { recordInterval, type HeartbeatHistory } from '../src/core/heartbeat-history.js';
import { firstHistory, phiCrossingMs, resolvePhiOptions, type PhiOptions, type ResolvedPhiOptions } from '../src/core/phi.js';
import { badSampleField, sampleUpdate, type NodeSample } from './node-sample.js';

export { isGoodValue, badSampleField, sampleProblem, ewma, effectiveValues } from './node-sample.js';
export type { NodeSample } from './node-sample.js';

/**
 * A node actor's context: its EWMAs (measured values only) and how many samples fed them, at the
 * top level; what a sample never changes in two records. Few top-level fields because `assign`
 * copies the whole context on every sample: each field cost about 8 ns a report (docs/machine.md).
 */
export interface NodeContext {
  readonly load?: number;
  readonly latencyMs?: number;
  readonly score?: number;
  readonly samples: number;
  /** Fixed for the actor's life. */
  readonly settings: NodeSettings;
  /** Its failure detector's and passive ejection's state. */
  readonly health: NodeHealth;
}

/** What a node actor is set up with and keeps for its life. */
export interface NodeSettings {
  readonly id: string;
  /** EWMA smoothing factor in (0, 1]. */
  readonly alpha: number;
  /** What the profile declared; stands in until the first measured sample of that field. */
  readonly declared: { readonly latencyMs?: number; readonly score?: number };
  /** The failure detector's settings (defaults filled in). */
  readonly phi: ResolvedPhiOptions;
  /** Passive ejection's settings (defaults filled in). */
  readonly ejection: ResolvedEjectionOptions;
}

/** A node actor's failure detection and ejection record. */
export interface NodeHealth {
  /** Inter-arrival times of its heartbeats; undefined until the first one: detection is off until then. */
  readonly history?: HeartbeatHistory;
  /** When the last heartbeat arrived (the actor clock's ms); undefined after a revival, so the gap is not measured. */
  readonly lastHeartbeatAt?: number;
  /**
   * When the last heartbeat came (the actor clock's ms), whatever the state: unlike
   * `lastHeartbeatAt` it is kept while down, and taken in every down state. What an orchestrator
   * shows of an agent's silence reads it (`swarm.node(id).heardAt`); the detector never does.
   */
  readonly heardAt?: number;
  /** Consecutive failed outcomes, capped at the ejection threshold. */
  readonly failures: number;
  /** Ejections in a row (each doubles the ban), capped where the ban stops growing. */
  readonly ejections: number;
  /** Back from a ban: the first failure ejects again; the first success ends it. */
  readonly probation: boolean;
}

/** What a node actor is created with. */
export interface NodeInput {
  readonly id: string;
  /** @defaultValue 0.3 */
  readonly alpha?: number;
  readonly latencyMs?: number;
  readonly score?: number;
  /** Failure detector settings. @defaultValue Akka's: see `DEFAULT_PHI` */
  readonly phi?: PhiOptions;
  /** Passive ejection settings. @defaultValue see `DEFAULT_EJECTION` */
  readonly ejection?: EjectionOptions;
  /** Its ejection record, when restored from a persisted swarm (docs/persistence.md). @defaultValue none */
  readonly record?: NodeRecord;
}

/** A node's ejection record: what `Swarm.persist` keeps of a node actor besides its liveness. */
export interface NodeRecord {
  readonly failures: number;
  readonly ejections: number;
  readonly probation: boolean;
}

/**
 * Why a node went down: the orchestrator said so, the failure detector, passive ejection, or
 * `integrity`: its output disagreed with the majority of the copies that re-ran its span
 * (docs/security.md, "Verification"): quarantined until marked alive by hand.
 */
export type DownCause = 'manual' | 'detector' | 'ejected' | 'integrity';

/** Why a node came back: the orchestrator (`manual`), a heartbeat or other proof of life after a detector down, or the end of a ban. */
export type AliveCause = 'manual' | 'heartbeat' | 'probation';

/** The events a node actor understands. */
export type NodeEvent =
  | { readonly type: 'node.telemetry'; readonly sample: NodeSample }
  /** A heartbeat, stamped with the actor clock's time. */
  | { readonly type: 'node.heartbeat'; readonly at: number }
  /**
   * Another proof of life (a telemetry report, a successful request), stamped like a heartbeat: it
   * restarts the detector's wait but adds no interval (it does not come at the heartbeat's pace),
   * and never starts detection.
   */
  | { readonly type: 'node.seen'; readonly at: number }
  /** How a request it served ended. */
  | { readonly type: 'node.outcome'; readonly ok: boolean }
  /** From the Swarm: down (`manual` when no cause is given; `detector` from a detector the owner decided on or a restore; the echo of its own report otherwise). */
  | { readonly type: 'node.down'; readonly cause?: DownCause }
  | { readonly type: 'node.alive' }
  | { readonly type: 'node.retire' };

/**
 * What a node actor tells its Swarm (its parent) — and emits, for a node actor run on its own:
 * it became suspect, the detector took it down, it asks to be ejected (the Swarm decides, as only
 * it knows how many are out), or it came back by itself.
 */
export type NodeReport =
  | { readonly type: 'node.suspected'; readonly nodeId: string }
  | { readonly type: 'node.cleared'; readonly nodeId: string }
  | { readonly type: 'node.down'; readonly nodeId: string; readonly cause: 'detector' }
  | { readonly type: 'node.eject'; readonly nodeId: string }
  | { readonly type: 'node.alive'; readonly nodeId: string; readonly cause: 'heartbeat' | 'probation' };

const phiCache = new WeakMap<PhiOptions, ResolvedPhiOptions>();
const ejectionCache = new WeakMap<EjectionOptions, ResolvedEjectionOptions>();
const DEFAULT_PHI_RESOLVED = Object.freeze(resolvePhiOptions());
const DEFAULT_EJECTION_RESOLVED = Object.freeze(resolveEjectionOptions());

function sharedPhi(o: PhiOptions | undefined): ResolvedPhiOptions {
  if (o === undefined) return DEFAULT_PHI_RESOLVED;
  let r = phiCache.get(o);
  if (r === undefined) phiCache.set(o, (r = Object.freeze(resolvePhiOptions(o))));
  return r;
}

function sharedEjection(o: EjectionOptions | undefined): ResolvedEjectionOptions {
  if (o === undefined) return DEFAULT_EJECTION_RESOLVED;
  let r = ejectionCache.get(o);
  if (r === undefined) ejectionCache.set(o, (r = Object.freeze(resolveEjectionOptions(o))));
  return r;
}

/** The heartbeat's effect on the detector: the first one starts it; later ones add their gap. */
function heartbeatUpdate(ctx: NodeContext, at: number): Partial<NodeContext> {
  const h = ctx.health;
  if (h.history === undefined) return healthWith(ctx, { history: firstHistory(ctx.settings.phi), lastHeartbeatAt: at, heardAt: at });
  if (h.lastHeartbeatAt === undefined) return healthWith(ctx, { lastHeartbeatAt: at, heardAt: at });
  return healthWith(ctx, { history: recordInterval(h.history, Math.max(at - h.lastHeartbeatAt, 0)), lastHeartbeatAt: at, heardAt: at });
}

/** The context's health record with `change` made. */
function healthWith(ctx: NodeContext, change: Partial<NodeHealth>): Pick<NodeContext, 'health'> {
  return { health: { ...ctx.health, ...change } };
}

/** How long after the last heartbeat the node becomes suspect: when phi reaches the suspect level. */
export function suspectAfterMs(ctx: Pick<NodeContext, 'settings' | 'health'>): number {
  const { history } = ctx.health;
  const { phi } = ctx.settings;
  return history === undefined ? Number.POSITIVE_INFINITY : phiCrossingMs(phi.suspectThreshold, history, phi);
}

/** How long a suspect node has before it is down: until phi reaches the threshold. */
export function downAfterMs(ctx: Pick<NodeContext, 'settings' | 'health'>): number {
  const { history } = ctx.health;
  const { phi } = ctx.settings;
  if (history === undefined) return Number.POSITIVE_INFINITY;
  return Math.max(phiCrossingMs(phi.threshold, history, phi) - suspectAfterMs(ctx), 0);
}

/**
 * What every live state (`unmonitored`, `watching`, `suspect`) does besides detection: telemetry
 * and outcomes (targetless: neither restarts the detector's timers), marks down, retirement.
 */
const aliveOn = {
  'node.telemetry': { guard: 'goodSample', actions: 'recordSample' },
  'node.outcome': [
    { guard: 'succeeded', actions: 'recordSuccess' },
    { guard: 'failureEjects', actions: ['recordFailure', 'askEjection'] },
    { actions: 'recordFailure' },
  ],
  'node.down': [
    { guard: 'ejectedCause', target: '#node.down.ejected' },
    { guard: 'manualCause', target: '#node.down.manual' },
    { guard: 'integrityCause', target: '#node.down.quarantined' },
    // A detector elsewhere (the owner decided it), or a restored swarm: down as if its own detector said so.
    { guard: 'detectorCause', target: '#node.down.detected' },
  ],
  'node.retire': { target: '#node.retired' },
} as const;

/**
 * One node of the swarm, holding its load, latency and score EWMAs, its failure detector and its
 * ejection record. A bad sample (NaN, ±Infinity, negative) is refused by a guard and leaves every
 * EWMA untouched. A down node ignores telemetry and outcomes: they are stale by definition.
 *
 * Detection (opt-in: it starts at the first heartbeat): `watching` waits, on the actor
 * clock, until phi would reach the suspect level, then `suspect` until it would reach the
 * threshold, then `down.detected` — reporting each step to the Swarm. A heartbeat restarts the
 * wait, from `suspect` too, and brings a node the detector took down back. Passive ejection: at
 * the consecutive-failure threshold (the first failure on probation) the node asks the Swarm to
 * eject it; ejected, it waits out a ban that doubles with each ejection in a row, then returns on
 * probation. The orchestrator's marks win: `node.down` (manual) from any state makes the node wait
 * for `node.alive`; heartbeats and bans no longer bring it back. The live states are top-level
 * (`unmonitored`, `watching`, `suspect`: {@link isNodeAlive}); the down ones are `down.*`.
 */
export const nodeMachine = setup({
  types: {
    context: {} as NodeContext,
    events: {} as NodeEvent,
    input: {} as NodeInput,
    emitted: {} as NodeReport,
  },
  guards: {
    goodSample: ({ event }) => event.type === 'node.telemetry' && badSampleField(event.sample) === undefined,
    monitored: ({ context }) => context.health.history !== undefined,
    succeeded: ({ event }) => event.type === 'node.outcome' && event.ok,
    /** This failure (one more in a row) reaches the threshold, or breaks probation. */
    failureEjects: ({ context, event }) =>
      event.type === 'node.outcome' && !event.ok && shouldEject(Math.min(context.health.failures + 1, context.settings.ejection.consecutiveFailures), context.health.probation, context.settings.ejection),
    manualCause: ({ event }) => event.type === 'node.down' && (event.cause ?? 'manual') === 'manual',
    detectorCause: ({ event }) => event.type === 'node.down' && event.cause === 'detector',
    ejectedCause: ({ event }) => event.type === 'node.down' && event.cause === 'ejected',
    integrityCause: ({ event }) => event.type === 'node.down' && event.cause === 'integrity',
  },
  delays: {
    suspectAfter: ({ context }) => suspectAfterMs(context),
    downAfter: ({ context }) => downAfterMs(context),
    banAfter: ({ context }) => banMs(context.health.ejections, context.settings.ejection),
  },
  actions: {
    recordSample: assign(({ context, event }) => (event.type === 'node.telemetry' ? sampleUpdate(context, event.sample) : {})),
    recordHeartbeat: assign(({ context, event }) => (event.type === 'node.heartbeat' ? heartbeatUpdate(context, event.at) : {})),
    /** Down by hand, ejected or quarantined: the heartbeat changes nothing but when it was heard. */
    recordHeard: assign(({ context, event }) => (event.type === 'node.heartbeat' ? healthWith(context, { heardAt: event.at }) : {})),
    /** Down, the gap until the next heartbeat says nothing of the heartbeat interval. */
    forgetLastHeartbeat: assign(({ context }) => healthWith(context, { lastHeartbeatAt: undefined })),
    recordSuccess: assign(({ context }) => healthWith(context, { failures: 0, probation: false, ejections: 0 })),
    recordFailure: assign(({ context }) => healthWith(context, { failures: Math.min(context.health.failures + 1, context.settings.ejection.consecutiveFailures) })),
    recordEjection: assign(({ context }) => healthWith(context, { failures: 0, ejections: Math.min(context.health.ejections + 1, maxBanLevel(context.settings.ejection)) })),
    startProbation: assign(({ context }) => healthWith(context, { probation: true })),
    endProbation: assign(({ context }) => healthWith(context, { probation: false })),
    tellSuspected: enqueueActions(({ context, enqueue, self }) => report(enqueue, self, { type: 'node.suspected', nodeId: context.settings.id })),
    tellCleared: enqueueActions(({ context, enqueue, self }) => report(enqueue, self, { type: 'node.cleared', nodeId: context.settings.id })),
    tellDetectedDown: enqueueActions(({ context, enqueue, self }) => report(enqueue, self, { type: 'node.down', nodeId: context.settings.id, cause: 'detector' })),
    askEjection: enqueueActions(({ context, enqueue, self }) => report(enqueue, self, { type: 'node.eject', nodeId: context.settings.id })),
    tellBackByHeartbeat: enqueueActions(({ context, enqueue, self }) => report(enqueue, self, { type: 'node.alive', nodeId: context.settings.id, cause: 'heartbeat' })),
    tellBackOnProbation: enqueueActions(({ context, enqueue, self }) => report(enqueue, self, { type: 'node.alive', nodeId: context.settings.id, cause: 'probation' })),
  },
}).createMachine({
  id: 'node',
  context: ({ input }) => ({
    samples: 0,
    settings: {
      id: input.id,
      alpha: input.alpha ?? 0.3,
      declared: {
        ...(input.latencyMs !== undefined ? { latencyMs: input.latencyMs } : {}),
        ...(input.score !== undefined ? { score: input.score } : {}),
      },
      phi: sharedPhi(input.phi),
      ejection: sharedEjection(input.ejection),
    },
    health: {
      failures: input.record?.failures ?? 0,
      ejections: input.record?.ejections ?? 0,
      probation: input.record?.probation ?? false,
    },
  }),
  initial: 'unmonitored',
  // The live states sit at the top level, untagged: a report is the hot path, and XState resolves
  // an event on a top-level state with a string value and no parent to walk (a nested `alive.*`
  // cost a quarter of a bare actor's rate; a tag, a Set per snapshot, another tenth; docs/machine.md).
  // Each repeats `aliveOn`; `isNodeAlive` tells a live state.
  states: {
    unmonitored: {
      on: { ...aliveOn, 'node.heartbeat': { target: 'watching', actions: 'recordHeartbeat' } },
    },
    watching: {
      after: { suspectAfter: 'suspect' },
      on: {
        ...aliveOn,
        'node.heartbeat': { target: 'watching', reenter: true, actions: 'recordHeartbeat' },
        'node.seen': { target: 'watching', reenter: true },
      },
    },
    suspect: {
      entry: 'tellSuspected',
      after: { downAfter: '#node.down.detected' },
      on: {
        ...aliveOn,
        'node.heartbeat': { target: 'watching', actions: ['recordHeartbeat', 'tellCleared'] },
        'node.seen': { target: 'watching', actions: 'tellCleared' },
      },
    },
    down: {
      initial: 'manual',
      entry: 'forgetLastHeartbeat',
      on: {
        // Back: watched again if heartbeats ever came (no transient state: 10,000 nodes start in `unmonitored`).
        'node.alive': [
          { guard: 'monitored', target: 'watching', actions: 'endProbation' },
          { target: 'unmonitored', actions: 'endProbation' },
        ],
        'node.retire': { target: 'retired' },
        // Heard, yet still down (a detector down has its own: a heartbeat brings it back).
        'node.heartbeat': { actions: 'recordHeard' },
      },
      states: {
        /** Marked down by the orchestrator: only `node.alive` brings it back. */
        manual: {},
        /** Quarantined for a wrong output (cause `integrity`): like `manual`, only `node.alive` brings it back. */
        quarantined: {},
        /** Taken down by the detector: a heartbeat brings it back; a manual mark makes it manual. */
        detected: {
          entry: 'tellDetectedDown',
          on: {
            'node.heartbeat': { target: '#node.watching', actions: ['recordHeartbeat', 'tellBackByHeartbeat'] },
            // Watched again only if heartbeats ever came: a detector down decided elsewhere, or restored, may have none.
            'node.seen': [
              { guard: 'monitored', target: '#node.watching', actions: 'tellBackByHeartbeat' },
              { target: '#node.unmonitored', actions: 'tellBackByHeartbeat' },
            ],
            'node.down': { guard: 'manualCause', target: 'manual' },
          },
        },
        /** Ejected for its failures: back on probation when the ban ends. */
        ejected: {
          entry: 'recordEjection',
          after: {
            banAfter: [
              { guard: 'monitored', target: '#node.watching', actions: ['startProbation', 'tellBackOnProbation'] },
              { target: '#node.unmonitored', actions: ['startProbation', 'tellBackOnProbation'] },
            ],
          },
          on: { 'node.down': { guard: 'manualCause', target: 'manual' } },
        },
      },
    },
    retired: { type: 'final' },
  },
});

/** Whether a node actor's snapshot is in a live state (`unmonitored`, `watching` or `suspect`). */
export function isNodeAlive(snapshot: { readonly value: unknown; readonly status: string }): boolean {
  return snapshot.status === 'active' && (snapshot.value === 'unmonitored' || snapshot.value === 'watching' || snapshot.value === 'suspect');
}

/** Sends a report to the Swarm (when the node has one) and emits it, so a lone node actor can be watched too. */
function report(
  enqueue: { sendParent: (event: NodeReport) => void; emit: (event: NodeReport) => void },
  self: { _parent?: unknown },
  event: NodeReport,
): void {
  if (self._parent !== undefined) enqueue.sendParent(event);
  enqueue.emit(event);
}
