import type { DownCause, AliveCause, NodeRecord } from '../../machines/node.machine.js';
import type { LiveStatus, SwarmContext, SwarmOutcome, SwarmRestore } from '../../machines/swarm.machine.js';
import { describeValue, isRecordLike } from '../core/describe.js';
import { canonicalJson, hashText } from '../core/digest.js';
import { SwarmError } from '../core/errors.js';
import { deepFreeze } from '../core/freeze.js';
import type { NodeProfile, SwarmPlan } from '../core/types.js';
import { profileIssues, validatePlan } from '../core/validate.js';

/**
 * A swarm's lifecycle state as plain JSON (`swarm.persist()`), and the checks that turn it back
 * into what the Swarm statechart is created with (`createSwarm(profiles, config, { restore })`).
 * docs/persistence.md.
 */

/** One lifecycle event in its wire form, as a replicated log carries it (`swarm.apply(event)`). */
export type LifecycleEvent =
  | { readonly type: 'node.added'; readonly profile: NodeProfile }
  | { readonly type: 'node.removed'; readonly nodeId: string }
  /** `manual` when no cause is given. */
  | { readonly type: 'node.down'; readonly nodeId: string; readonly cause?: DownCause }
  /** `manual` when no cause is given. */
  | { readonly type: 'node.alive'; readonly nodeId: string; readonly cause?: AliveCause };

/** A member of a persisted swarm, in join order. */
export interface PersistedMember {
  readonly profile: NodeProfile;
  /** `up`, or why it is down. */
  readonly state: 'up' | DownCause;
  /** Its node actor's ejection record; absent when fresh (no failure, no ejection, no probation). */
  readonly record?: NodeRecord;
}

/** The last decision of a persisted swarm: a growth or retirement without its plan (it is the snapshot's `plan`). */
export type PersistedOutcome =
  | Exclude<SwarmOutcome, { kind: 'growth' | 'retirement' }>
  | Omit<Extract<SwarmOutcome, { kind: 'growth' }>, 'plan'>
  | Omit<Extract<SwarmOutcome, { kind: 'retirement' }>, 'plan'>;

/**
 * A swarm's lifecycle state, JSON-serialisable: what `swarm.persist()` returns and
 * `createSwarm(profiles, config, { restore })` continues from. Local observations (telemetry
 * EWMAs, leases, release windows, heartbeat histories) are not in it.
 */
export interface PersistedSwarm {
  readonly format: 'hecate-swarm/swarm';
  readonly version: 1;
  /** Digest of the profiles the swarm was created with. */
  readonly profiles: string;
  /** Digest of the config it was created with. */
  readonly config: string;
  readonly status: LiveStatus;
  readonly plan: SwarmPlan;
  readonly members: readonly PersistedMember[];
  /** The seeded id counter; null when the swarm mints ids from an `idSource` (or nanoid). */
  readonly ids: number | null;
  /** The last decision, or null. */
  readonly outcome: PersistedOutcome | null;
  /** `swarm.digest()` when it was persisted: checked on restore. */
  readonly digest: string;
}

/** What a checked snapshot gives the Swarm to start from. */
export interface Restored {
  readonly plan: SwarmPlan;
  readonly profiles: readonly NodeProfile[];
  readonly restore: SwarmRestore;
  readonly ids: number | null;
}

const STATES: ReadonlySet<string> = new Set(['up', 'manual', 'detector', 'ejected']);
const STATUSES: ReadonlySet<string> = new Set(['healthy', 'degraded', 'failed']);
const KINDS: ReadonlySet<string> = new Set(['rescue', 'revival', 'growth', 'retirement', 'refused']);
const DOWN_CAUSES: ReadonlySet<string> = new Set(['manual', 'detector', 'ejected']);
const ALIVE_CAUSES: ReadonlySet<string> = new Set(['manual', 'heartbeat', 'probation']);

/** The digest of plan, status, members' liveness and the id counter: `swarm.digest()`. */
export function lifecycleDigest(plan: SwarmPlan, status: string, members: readonly (readonly [NodeProfile, PersistedMember['state']])[], ids: number | null): string {
  return hashText(canonicalJson({ plan, status, members, ids }));
}

/** A digest of the `profiles` or `config` a swarm was created with. */
export function genesisDigest(value: unknown): string {
  return hashText(canonicalJson(value));
}

/** A member's state in the Swarm's context: `up`, or why it is down. */
export function memberState(context: Pick<SwarmContext, 'alive' | 'detected' | 'ejected'>, id: string, slot: number): PersistedMember['state'] {
  if (context.alive[slot] === 1) return 'up';
  return context.detected.has(id) ? 'detector' : context.ejected.has(id) ? 'ejected' : 'manual';
}

/** The outcome as persisted: without the plan it adopted. */
export function persistedOutcome(outcome: SwarmOutcome | undefined): PersistedOutcome | null {
  if (outcome === undefined) return null;
  if (outcome.kind !== 'growth' && outcome.kind !== 'retirement') return outcome;
  const { plan: _plan, ...rest } = outcome;
  return rest;
}

const bad = (field: string, message: string) => new SwarmError('InvalidInput', `restore: field "${field}" ${message}; pass what swarm.persist() returned, unchanged`);

/**
 * Checks a persisted swarm against the profiles and config digests of the swarm to create, and
 * turns it into the statechart's restore input.
 * @throws {SwarmError} `InvalidInput` naming the first bad field
 */
export function readPersisted(value: unknown, digests: { readonly profiles: string; readonly config: string }): Restored {
  let data: unknown;
  try {
    data = JSON.parse(JSON.stringify(value)) as unknown; // a plain copy: no getter, no prototype, no cycle
  } catch {
    throw new SwarmError('InvalidInput', `restore: the persisted swarm must be plain JSON data from swarm.persist(), got ${describeValue(value)} that does not serialise`);
  }
  if (!isRecordLike(data)) throw new SwarmError('InvalidInput', `restore: the persisted swarm must be the object swarm.persist() returned, got ${describeValue(value)}`);
  const s = data;
  if (s['format'] !== 'hecate-swarm/swarm') throw bad('format', `must be "hecate-swarm/swarm", got ${describeValue(s['format'])}`);
  if (s['version'] !== 1) throw bad('version', `must be 1, got ${describeValue(s['version'])}`);
  for (const field of ['profiles', 'config'] as const) {
    if (s[field] !== digests[field]) throw bad(field, `does not match: the swarm was persisted with other ${field} (digest ${describeValue(s[field])}, these give "${digests[field]}")`);
  }
  if (typeof s['status'] !== 'string' || !STATUSES.has(s['status'])) throw bad('status', `must be healthy, degraded or failed, got ${describeValue(s['status'])}`);
  const members = s['members'];
  if (!Array.isArray(members)) throw bad('members', `must be an array, got ${describeValue(members)}`);
  const profiles: NodeProfile[] = [];
  const down = new Map<string, DownCause>();
  const records = new Map<string, NodeRecord>();
  members.forEach((m: unknown, i) => {
    if (!isRecordLike(m) || !isRecordLike(m['profile'])) throw bad(`members[${i}]`, 'must be an object { profile, state, record? }');
    const { id, memoryGb, score, latencyMs } = m['profile'] as unknown as NodeProfile;
    const profile: NodeProfile = { id, memoryGb, ...(score !== undefined ? { score } : {}), ...(latencyMs !== undefined ? { latencyMs } : {}) };
    const state = m['state'];
    if (typeof state !== 'string' || !STATES.has(state)) throw bad(`members[${i}].state`, `must be up, manual, detector or ejected, got ${describeValue(state)}`);
    if (state !== 'up') down.set(profile.id, state as DownCause);
    if (m['record'] !== undefined) records.set(profile.id, readRecord(m['record'], `members[${i}].record`));
    profiles.push(profile);
  });
  const issue = profileIssues(profiles)[0];
  if (issue !== undefined) throw bad('members', `holds a bad profile: ${issue.message}`);
  const plan = s['plan'] as SwarmPlan;
  const planIssues = validatePlan(plan, profiles);
  if (planIssues.length > 0) throw bad('plan', `does not validate over the members: ${planIssues.map((p) => p.message).join('; ')}`);
  const ids = s['ids'];
  if (ids !== null && !(Number.isInteger(ids) && (ids as number) >= 0 && (ids as number) < 2 ** 32)) throw bad('ids', `must be null or an integer from 0 to 2^32 - 1, got ${describeValue(ids)}`);
  const outcome = readOutcome(s['outcome'], plan);
  const status = statusOf(plan, profiles, down);
  if (status !== s['status']) throw bad('status', `says ${s['status'] as string} but the members' liveness gives ${status}`);
  const digest = lifecycleDigest(plan, status, profiles.map((p) => [p, down.get(p.id) ?? 'up'] as const), ids as number | null);
  if (s['digest'] !== digest) throw bad('digest', `does not match the snapshot's state (got ${describeValue(s['digest'])}, the state gives "${digest}"): it was altered or corrupted`);
  return { plan: deepFreeze(plan), profiles, restore: { down, records, outcome }, ids: ids as number | null };
}

function readRecord(value: unknown, field: string): NodeRecord {
  const r = value as Record<string, unknown>;
  const count = (v: unknown) => Number.isInteger(v) && (v as number) >= 0;
  if (!isRecordLike(value) || !count(r['failures']) || !count(r['ejections']) || typeof r['probation'] !== 'boolean') {
    throw bad(field, 'must be { failures, ejections, probation } with counts >= 0 and a boolean');
  }
  return { failures: r['failures'] as number, ejections: r['ejections'] as number, probation: r['probation'] as boolean };
}

function readOutcome(value: unknown, plan: SwarmPlan): SwarmOutcome | undefined {
  if (value === null) return undefined;
  if (!isRecordLike(value) || typeof value['kind'] !== 'string' || !KINDS.has(value['kind']) || typeof value['nodeId'] !== 'string') {
    throw bad('outcome', 'must be null or a decision { kind, nodeId, … } (rescue, revival, growth, retirement or refused)');
  }
  const kind = value['kind'];
  const arrays = kind === 'rescue' ? ['recoveries', 'unrecoverable'] : kind === 'growth' ? ['pipelines', 'replaced'] : kind === 'retirement' ? ['relocated', 'dropped'] : [];
  for (const key of arrays) if (!Array.isArray(value[key])) throw bad(`outcome.${key}`, `must be an array for a ${kind}`);
  if (kind === 'growth' && (!isRecordLike(value['profile']) || typeof value['role'] !== 'string')) throw bad('outcome', 'of a growth must carry the profile and the role');
  const outcome = kind === 'growth' || kind === 'retirement' ? { ...value, plan } : value;
  return deepFreeze(outcome) as unknown as SwarmOutcome;
}

/** The status the members' liveness gives: what the statechart settles on. */
function statusOf(plan: SwarmPlan, profiles: readonly NodeProfile[], down: ReadonlyMap<string, DownCause>): LiveStatus {
  if (down.size === profiles.length) return 'failed';
  for (const p of plan.pipelines) for (const s of p.stages) if (down.has(s.nodeId)) return 'degraded';
  return 'healthy';
}

/**
 * Checks a lifecycle event's wire form.
 * @throws {SwarmError} `InvalidInput` naming the bad field
 */
export function readLifecycleEvent(event: LifecycleEvent): LifecycleEvent {
  if (!isRecordLike(event)) throw new SwarmError('InvalidInput', `a lifecycle event must be an object { type, … }, got ${describeValue(event)}`);
  const { type } = event;
  if (type === 'node.added') return { type, profile: event.profile };
  if (type !== 'node.removed' && type !== 'node.down' && type !== 'node.alive') {
    throw new SwarmError('InvalidInput', `lifecycle event "type" must be node.added, node.removed, node.down or node.alive, got ${describeValue(type)}`);
  }
  const { nodeId } = event;
  if (typeof nodeId !== 'string') throw new SwarmError('InvalidInput', `${type} "nodeId" must be a node id string, got ${describeValue(nodeId)}`);
  if (type === 'node.removed') return { type, nodeId };
  const cause = (event as { cause?: unknown }).cause ?? 'manual';
  const causes = type === 'node.down' ? DOWN_CAUSES : ALIVE_CAUSES;
  if (typeof cause !== 'string' || !causes.has(cause)) throw new SwarmError('InvalidInput', `${type} "cause" must be one of ${[...causes].join(', ')}, got ${describeValue(cause)}`);
  return type === 'node.down' ? { type, nodeId, cause: cause as DownCause } : { type, nodeId, cause: cause as AliveCause };
}
