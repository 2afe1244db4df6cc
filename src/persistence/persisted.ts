import type { DownCause, NodeRecord } from '../../machines/node.machine.js';
import { downCauseOf, type LiveStatus, type SwarmContext, type SwarmOutcome } from '../../machines/swarm.machine.js';
import { isRecordLike } from '../core/describe.js';
import { canonicalJson, hashText } from '../core/digest.js';
import { SwarmError } from '../core/errors.js';
import { deepFreeze } from '../core/freeze.js';
import type { NodeProfile, SwarmPlan } from '../core/types.js';
import { validatePlan } from '../core/validate.js';
import type { RestoredInput } from '../runtime/internal.js';
import { plainProfile } from '../runtime/plain.js';
import type { LifecycleCommand } from '../runtime/swarm-contract.js';
import type { Encoded } from './snapshot-codec.js';

/**
 * A swarm's saved state (`persistSwarm(swarm)`): the format, and the reader of the format before
 * it (docs/persistence.md).
 */

/** One lifecycle event in its wire form, as a replicated log carries it (`applyEvent(swarm, event)`). */
export type LifecycleEvent = LifecycleCommand;

/**
 * A saved swarm, JSON-serialisable: XState's own persisted snapshot of the Swarm actor (through the
 * snapshot codec), its node actors' ejection records, and the digests that tie it to the profiles
 * and config it was created with. Local observations (telemetry EWMAs, leases, release windows,
 * heartbeat histories) are not in it.
 */
export interface PersistedSwarm {
  readonly format: 'hecate-swarm/snapshot';
  readonly version: 1;
  /** Digest of the profiles the swarm was created with. */
  readonly profiles: string;
  /** Digest of the config it was created with. */
  readonly config: string;
  /** `swarmDigest(swarm)` when it was saved: checked on restore. */
  readonly digest: string;
  /** Whether pipeline ids come from the snapshot's seeded counter (else from an id source). */
  readonly seeded: boolean;
  /** `swarm.actor.getPersistedSnapshot()`, its Maps, Sets and byte array encoded (`snapshot-codec.ts`). */
  readonly snapshot: Encoded;
  /** Node actors' ejection records (members with none are fresh: no failure, ejection or probation). */
  readonly records: readonly (readonly [string, NodeRecord])[];
}

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
 * A save of the format before the snapshot (`hecate-swarm/swarm` version 1): still read, never
 * written.
 */
export interface LegacyPersistedSwarm {
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
  /** `swarmDigest(swarm)` when it was persisted: checked on restore. */
  readonly digest: string;
}


const STATES: readonly string[] = ['up', 'manual', 'detector', 'ejected', 'integrity'];

/** The digest of plan, status, members' liveness and the id counter: `swarmDigest(swarm)`. */
export function lifecycleDigest(plan: SwarmPlan, status: string, members: readonly (readonly [NodeProfile, string])[], ids: number | null): string {
  return hashText(canonicalJson({ plan, status, members, ids }));
}

/** A member's state in the Swarm's context: `up`, or why it is down. */
export function memberState(context: Pick<SwarmContext, 'members' | 'alive' | 'detected' | 'ejected' | 'quarantined'>, id: string): PersistedMember['state'] {
  return downCauseOf(context, id) ?? 'up';
}


/** Throws `InvalidInput` naming a field of a save unless `ok`. */
export function need(ok: unknown, field: string, what: string): void {
  if (!ok) throw new SwarmError('InvalidInput', `restore: field "${field}" must be ${what}; pass what persistSwarm() returned`);
}

/** The digests of the profiles and config the swarm was created with: a save must carry the same. */
export function checkDigests(r: Record<string, unknown>, profilesDigest: string, configDigest: string): void {
  const given: Record<string, string> = { profiles: profilesDigest, config: configDigest };
  for (const field in given) need(r[field] === given[field], field, `${given[field]}, from the ${field} given: they differ`);
}

/** A save as a plain copy (no getter, no prototype, no cycle), or undefined when it is not JSON. */
export function plainCopy(value: unknown): unknown {
  try {
    return JSON.parse(JSON.stringify(value));
  } catch {
    return undefined;
  }
}

/**
 * Checks a save of the format before the snapshot (`hecate-swarm/swarm` version 1) against the
 * digests of the profiles and config of the swarm to create, and turns it into the statechart's
 * restore input.
 * @throws {SwarmError} `InvalidInput` naming the first bad field
 */
export function readLegacy(r: Record<string, unknown>, profilesDigest: string, configDigest: string): RestoredInput {
  checkDigests(r, profilesDigest, configDigest);
  need(Array.isArray(r['members']), 'members', 'an array');
  const profiles: NodeProfile[] = [];
  const down = new Map<string, DownCause>();
  const records = new Map<string, NodeRecord>();
  const count = (v: unknown) => Number.isInteger(v) && (v as number) >= 0;
  (r['members'] as PersistedMember[]).forEach((m, i) => {
    need(isRecordLike(m) && isRecordLike(m.profile) && STATES.includes(m.state), `members[${i}]`, '{ profile, state, record? }');
    const { record } = m;
    need(record === undefined || (count(record.failures) && count(record.ejections) && typeof record.probation === 'boolean'), `members[${i}].record`, '{ failures, ejections, probation }');
    const profile = plainProfile(m.profile);
    profiles.push(profile);
    if (m.state !== 'up') down.set(profile.id, m.state);
    if (record !== undefined) records.set(profile.id, record);
  });
  const plan = r['plan'] as SwarmPlan;
  const issue = validatePlan(plan, profiles)[0]; // the members' profiles too
  need(issue === undefined, 'plan', `valid over the members: ${issue?.message}`);
  const ids = r['ids'];
  need(ids === null || (count(ids) && (ids as number) < 2 ** 32), 'ids', 'null or a 32-bit counter');
  const o = r['outcome'] as Record<string, unknown> | null;
  need(o === null || (isRecordLike(o) && ['rescue', 'revival', 'growth', 'retirement', 'refused'].includes(o['kind'] as string)), 'outcome', 'null or a decision');
  const failed = down.size === profiles.length;
  const status = failed ? 'failed' : plan.pipelines.some((p) => p.stages.some((x) => down.has(x.nodeId))) ? 'degraded' : 'healthy';
  need(r['status'] === status, 'status', `${status}, as the members' liveness gives`);
  const digest = lifecycleDigest(plan, status, profiles.map((p) => [p, down.get(p.id) ?? 'up']), ids as number | null);
  need(r['digest'] === digest, 'digest', `${digest}, the state's: it was altered`);
  const outcome = o === null ? undefined : (deepFreeze(o['kind'] === 'growth' || o['kind'] === 'retirement' ? { ...o, plan } : o) as unknown as SwarmOutcome);
  return { plan: deepFreeze(plan), profiles, restore: { down, records, outcome }, ids: ids as number | null };
}
