/**
 * The Swarm's three decisions, over its context and what it reads besides (its injected
 * readers): the rescue before a mark, growth and retirement (the telomerase). Pure given their
 * readers; the machine assigns what they return.
 */
import type { ExtraLoad } from '../src/core/cost.js';
import { deepFreeze } from '../src/core/freeze.js';
import { nextSeededId } from '../src/core/seeded-id.js';
import { declaredTelemetry } from '../src/core/state.js';
import { planGrowth, planRetirement } from '../src/core/telomerase.js';
import type { IdSource, NodeProfile, NodeStates, NodeTelemetry } from '../src/core/types.js';
import { validatePlan } from '../src/core/validate.js';
import { computeRescue } from './rescue.js';
import { livenessView, type Member, type SwarmContext, type SwarmEvent, type SwarmReaders } from './swarm-context.js';

/** An id source over the context's seeded state (or the injected one), and the state it ends in. */
function minter(context: SwarmContext, ids: IdSource | undefined): { next: IdSource; state: () => number } {
  if (ids !== undefined) return { next: ids, state: () => context.idState };
  let state = context.idState;
  return {
    next: () => {
      const [id, after] = nextSeededId(state);
      state = after;
      return id;
    },
    state: () => state,
  };
}

export function profilesOf(context: SwarmContext): NodeProfile[] {
  const out: NodeProfile[] = [];
  for (const m of context.members.values()) out.push(m.profile);
  return out;
}

const issuesText = (issues: readonly { message: string }[]) => issues.map((i) => i.message).join('; ');

/** Declared telemetry per member list (immutable per growth or retirement): the default reader's table. */
const declaredByMembers = new WeakMap<ReadonlyMap<string, Member>, NodeStates>();

/** The telemetry a decision reads: the injected reader's, else each member's declared values. */
function telemetryOf(context: SwarmContext, readers: SwarmReaders): NodeStates {
  if (readers.telemetry !== undefined) return readers.telemetry();
  let table = declaredByMembers.get(context.members);
  if (table === undefined) declaredByMembers.set(context.members, (table = declaredTable(profilesOf(context))));
  return table;
}

const NO_LOAD: ExtraLoad = Object.freeze(Object.create(null) as ExtraLoad);

/** The rescue before a mark (`computeRescue`): the outcome, from the context before the mark. */
export function rescueUpdate(context: SwarmContext, event: SwarmEvent, readers: SwarmReaders): Partial<SwarmContext> {
  if (event.type !== 'node.down' && event.type !== 'node.eject') return {};
  const reads = { telemetry: telemetryOf(context, readers), inflight: readers.inflight?.() ?? NO_LOAD, index: readers.index };
  return { outcome: deepFreeze({ kind: 'rescue' as const, ...computeRescue(context, event.nodeId, reads) }) };
}

/** The telomerase's growth (`decideGrowth`), from the machine's own liveness; a plan that would not validate is refused. */
export function growthUpdate(context: SwarmContext, event: SwarmEvent, readers: SwarmReaders): Partial<SwarmContext> {
  if (event.type !== 'node.added') return {};
  const profile = deepFreeze({ ...event.profile });
  const profiles = [...profilesOf(context), profile];
  const ids = minter(context, readers.ids);
  const decision = planGrowth(context.plan, profiles, livenessView(context, telemetryOf(context, readers), profile), profile, context.wanted, ids.next);
  const issues = validatePlan(decision.plan, profiles);
  if (issues.length > 0) {
    return { outcome: { kind: 'refused' as const, event: event.type, nodeId: profile.id, reason: `refused a plan change that would not validate: ${issuesText(issues)}` } };
  }
  const { plan, role, modelId, pipelines, replaced, layersMoved } = decision;
  return {
    idState: ids.state(),
    outcome: deepFreeze({ kind: 'growth' as const, nodeId: profile.id, profile, role, ...(modelId !== undefined ? { modelId } : {}), pipelines, replaced, layersMoved, plan }),
  };
}

/** The telomerase's retirement (`decideRetirement`): its layers relocated; a plan that would not validate is refused. */
export function retirementUpdate(context: SwarmContext, event: SwarmEvent, readers: SwarmReaders): Partial<SwarmContext> {
  if (event.type !== 'node.removed') return {};
  const profiles = profilesOf(context);
  const decision = planRetirement(context.plan, profiles, livenessView(context, telemetryOf(context, readers)), event.nodeId);
  const issues = validatePlan(decision.plan, profiles.filter((p) => p.id !== event.nodeId));
  if (issues.length > 0) {
    return { outcome: { kind: 'refused' as const, event: event.type, nodeId: event.nodeId, reason: `refused a plan change that would not validate: ${issuesText(issues)}` } };
  }
  return { outcome: deepFreeze({ kind: 'retirement' as const, nodeId: event.nodeId, relocated: decision.relocated, dropped: decision.dropped, layersMoved: decision.layersMoved, plan: decision.plan }) };
}

export const DEFAULT_READERS: SwarmReaders = Object.freeze({});

/** Each profile's declared telemetry, as a null-prototype record. */
function declaredTable(profiles: readonly NodeProfile[]): NodeStates {
  const table: Record<string, NodeTelemetry> = Object.create(null) as Record<string, NodeTelemetry>;
  for (const p of profiles) table[p.id] = Object.freeze(declaredTelemetry(p));
  return table;
}

