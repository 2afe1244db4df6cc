/**
 * Persistence of a swarm (`hecate-swarm/persistence`, docs/persistence.md), built on XState's own
 * persisted snapshot: the Swarm's context is data, so `swarm.actor.getPersistedSnapshot()` through
 * the snapshot codec is the save, and `createActor(provideSwarm(…), { snapshot })` is the restore.
 * Also: a digest of the lifecycle state, and lifecycle events applied in their wire form, as a
 * replicated log carries them. Kept out of the root entry: a swarm that only routes does not
 * carry it. It reaches the Swarm through its internals' module symbol, nothing else.
 */
import type { NodeRecord } from '../../machines/node.machine.js';
import { isAliveIn, liveStatus, nodeKey, type LiveStatus, type NodeActorRef, type SwarmContext } from '../../machines/swarm.machine.js';
import { resolveEjectionOptions } from '../core/ejection.js';
import { planNodeIds } from '../core/state.js';
import { describeValue, isRecordLike } from '../core/describe.js';
import { canonicalJson, hashText } from '../core/digest.js';
import { SwarmError } from '../core/errors.js';
import { deepFreeze } from '../core/freeze.js';
import { swarmConfigIssue, swarmOptionsIssue } from '../core/swarm-config.js';
import type { NodeProfile } from '../core/types.js';
import { validatePlan } from '../core/validate.js';
import { kInternals, type SwarmInternals, type SwarmOrigin } from '../runtime/internal.js';
import { plainProfile } from '../runtime/plain.js';
import { Swarm } from '../runtime/swarm.js';
import type { Growth, Rescue, Retirement, Revival, SwarmConfig, SwarmOptions } from '../runtime/types.js';
import { checkDigests, lifecycleDigest, memberState, need, plainCopy, readLegacy, type LifecycleEvent, type PersistedSwarm } from './persisted.js';
import { decodeSnapshot, encodeSnapshot } from './snapshot-codec.js';

const FORMAT = 'hecate-swarm/snapshot';
const LEGACY = 'hecate-swarm/swarm';

/** The digests of the profiles and the config a swarm was created with. */
function genesisDigests([profiles, config]: readonly [readonly NodeProfile[], SwarmConfig]): [string, string] {
  return [hashText(canonicalJson(profiles)), hashText(canonicalJson(config))];
}

/** The running Swarm's internals; `InvalidInput` for anything else, `Stopped` for a stopped one. */
function internalsOf(swarm: Swarm, what: string): SwarmInternals {
  if (!(swarm instanceof Swarm)) throw new SwarmError('InvalidInput', `${what} needs a Swarm (made by createSwarm), got ${describeValue(swarm)}`);
  const internals = swarm[kInternals];
  internals.running();
  return internals;
}

/** A member's node actor's ejection record, unless fresh. */
function recordOf(internals: SwarmInternals, id: string): NodeRecord | undefined {
  const ref = internals.actor.system.get(nodeKey(id)) as NodeActorRef | undefined;
  const health = ref?.getSnapshot().context.health;
  if (health === undefined) return undefined;
  const { failures, ejections, probation } = health;
  return failures > 0 || ejections > 0 || probation ? { failures, ejections, probation } : undefined;
}

/** The lifecycle digest of a Swarm's context: plan, status, members' liveness (and why down), seeded id counter. */
function digestOf(context: SwarmContext, status: LiveStatus, seeded: boolean): string {
  const members: [NodeProfile, string][] = [];
  for (const [id, m] of context.members) members.push([m.profile, memberState(context, id)]);
  return lifecycleDigest(context.plan, status, members, seeded ? context.idState : null);
}

/**
 * The swarm's state as plain JSON: XState's persisted snapshot of the Swarm actor (plan, members
 * with their liveness and why down, status, id counter, last decision) through the snapshot
 * codec, and the node actors' ejection records. Telemetry EWMAs, leases, release windows and
 * heartbeat histories are local observations and are left out. {@link restoreSwarm} continues
 * from it (docs/persistence.md).
 * @throws {SwarmError} `Stopped`
 * @example const saved = JSON.stringify(persistSwarm(swarm));
 */
export function persistSwarm(swarm: Swarm): PersistedSwarm {
  const internals = internalsOf(swarm, 'persistSwarm');
  const snapshot = internals.actor.getSnapshot() as { context: SwarmContext; value: LiveStatus };
  const records: [string, NodeRecord][] = [];
  for (const id of snapshot.context.members.keys()) {
    const record = recordOf(internals, id);
    if (record !== undefined) records.push([id, record]);
  }
  const [profiles, config] = genesisDigests(internals.genesis);
  const saved = { format: FORMAT, version: 1, profiles, config, digest: digestOf(snapshot.context, snapshot.value, internals.seeded), seeded: internals.seeded, snapshot: encodeSnapshot(internals.actor.getPersistedSnapshot()), records };
  return deepFreeze(JSON.parse(JSON.stringify(saved)) as PersistedSwarm);
}

/**
 * A short stable hash (16 hex digits) of the plan, the status, every member's profile and
 * liveness (and why down) and the seeded id counter: equal on swarms that applied the same
 * lifecycle events, in any process; local telemetry does not enter it.
 * @example swarmDigest(a) === swarmDigest(b)
 */
export function swarmDigest(swarm: Swarm): string {
  if (!(swarm instanceof Swarm)) throw new SwarmError('InvalidInput', `swarmDigest needs a Swarm (made by createSwarm), got ${describeValue(swarm)}`);
  const internals = swarm[kInternals]; // a stopped swarm has a digest too, with the status stopped
  const snapshot = internals.actor.getSnapshot() as { context: SwarmContext; value: LiveStatus };
  return digestOf(snapshot.context, snapshot.value, internals.seeded);
}

/**
 * Creates and starts a swarm from a saved one (`persistSwarm`) instead of planning anew: the
 * same plan, members, liveness, status, id counter and last decision, through XState's own
 * restore of the Swarm actor. It must come from a swarm created with the same `profiles` and
 * `config` (their digests are checked). Saves of the format before the snapshot
 * (`hecate-swarm/swarm` version 1) are read too. `options` are `createSwarm`'s but `seed` and
 * `idSource` when the save has its id counter (docs/persistence.md). `policy` is a replica's
 * (`hecate-swarm/replication`): its node actors' own marks are handed to the log.
 * @throws {SwarmError} `InvalidInput` naming the first bad field of the save or option
 * @example const swarm = restoreSwarm(profiles, config, JSON.parse(saved));
 */
export function restoreSwarm(profiles: readonly NodeProfile[], config: SwarmConfig, persisted: PersistedSwarm, options: SwarmOptions = {}, policy: Pick<SwarmOrigin, 'defersOwnMarks'> = {}): Swarm {
  const given = Array.isArray(profiles) ? profiles.map(plainProfile) : profiles;
  const issue = swarmConfigIssue(config) ?? swarmOptionsIssue(options);
  if (issue !== undefined) throw new SwarmError('InvalidInput', issue);
  let digests: [string, string];
  try {
    digests = genesisDigests([given, config]);
  } catch (error) {
    throw new SwarmError('InvalidInput', `restoreSwarm: the profiles must be plain JSON data, as createSwarm was given (${error instanceof Error ? error.message : String(error)})`);
  }
  const r = plainCopy(persisted);
  need(isRecordLike(r), 'snapshot', `an object, got ${describeValue(persisted)}`);
  const saved = r as Record<string, unknown>;
  const known = (saved['format'] === FORMAT || saved['format'] === LEGACY) && saved['version'] === 1;
  need(known, 'version', `1 of format "${FORMAT}" (or "${LEGACY}", the format before it), got version ${describeValue(saved['version'])} of format ${describeValue(saved['format'])}: saved by another version of hecate-swarm`);
  const origin: SwarmOrigin = { ...(saved['format'] === LEGACY ? { restored: readLegacy(saved, ...digests) } : { snapshot: readSnapshot(saved, ...digests, config) }), ...policy };
  const seeded = origin.restored !== undefined ? origin.restored.ids !== null : origin.snapshot?.seeded === true;
  if (seeded && (options.seed ?? options.idSource) !== undefined) throw new SwarmError('InvalidInput', 'options "seed" and "idSource" cannot go with a persisted swarm: it has its id counter');
  let swarm: Swarm;
  try {
    swarm = new Swarm(profiles, config, options, origin);
  } catch (error) {
    if (error instanceof SwarmError) throw error;
    throw new SwarmError('InvalidInput', `restore: field "snapshot" could not be restored (${error instanceof Error ? error.message : String(error)}); pass what persistSwarm() returned`);
  }
  if (origin.snapshot !== undefined && swarmDigest(swarm) !== saved['digest']) {
    swarm.stop();
    need(false, 'digest', `${swarmDigest(swarm)}, the restored state's: the save was altered`);
  }
  return swarm;
}

/** Checks a save of the snapshot format and decodes it. */
function readSnapshot(r: Record<string, unknown>, profilesDigest: string, configDigest: string, config: SwarmConfig): NonNullable<SwarmOrigin['snapshot']> {
  checkDigests(r, profilesDigest, configDigest);
  need(typeof r['seeded'] === 'boolean', 'seeded', 'true or false');
  need(typeof r['digest'] === 'string', 'digest', 'a string');
  let value: unknown;
  try {
    value = decodeSnapshot(r['snapshot'], 'snapshot');
  } catch (error) {
    throw new SwarmError('InvalidInput', `restore: field ${(error as Error).message}`);
  }
  need(isRecordLike(value) && (value as { status?: unknown }).status === 'active', 'snapshot.status', '"active" (a running swarm)');
  const context = (value as { context?: Partial<SwarmContext> }).context;
  need(isRecordLike(context) && context.members instanceof Map && context.alive instanceof Uint8Array && isRecordLike(context.plan), 'snapshot.context', "a Swarm's context (members, alive, plan)");
  const c = context as SwarmContext;
  const profiles: NodeProfile[] = [];
  for (const [id, m] of c.members) {
    need(isRecordLike(m) && isRecordLike(m.profile) && m.profile.id === id && Number.isInteger(m.slot) && m.slot >= 0 && m.slot < c.alive.length, `snapshot.context.members[${describeValue(id)}]`, '{ profile, slot } with a slot in alive');
    profiles.push(m.profile);
  }
  const planIssue = validatePlan(c.plan, profiles)[0];
  need(planIssue === undefined, 'snapshot.context.plan', `valid over the members: ${planIssue?.message}`);
  checkDerived(c, config);
  need(Array.isArray(r['records']), 'records', 'an array of [nodeId, record] pairs');
  const count = (v: unknown) => Number.isInteger(v) && (v as number) >= 0;
  const records = new Map<string, NodeRecord>();
  (r['records'] as unknown[]).forEach((pair, i) => {
    const [id, rec] = Array.isArray(pair) ? (pair as [unknown, Partial<NodeRecord>]) : [];
    need(typeof id === 'string' && c.members.has(id) && isRecordLike(rec) && count(rec.failures) && count(rec.ejections) && typeof rec.probation === 'boolean', `records[${i}]`, '[memberId, { failures, ejections, probation }]');
    records.set(id as string, rec as NodeRecord);
  });
  need((value as { value?: unknown }).value === liveStatus(c), 'snapshot.value', `"${liveStatus(c)}", as the members' liveness gives`);
  return { value: value as NonNullable<SwarmOrigin['snapshot']>['value'], records, seeded: r['seeded'] as boolean };
}

/**
 * The context's fields that follow from its data (counters, sets, free slots) or from the config
 * (whose digest was checked) must be what they follow from: a save altered there would restore a
 * swarm whose counters or settings lie about its members.
 */
function checkDerived(c: SwarmContext, config: SwarmConfig): void {
  const at = (field: string) => `snapshot.context.${field}`;
  const slots = new Set<number>();
  for (const m of c.members.values()) slots.add(m.slot);
  need(slots.size === c.members.size, at('members'), 'members on distinct slots');
  const free = c.freeSlots;
  need(Array.isArray(free) && free.every((s) => Number.isInteger(s) && s >= 0 && s < c.alive.length && !slots.has(s)) && new Set(free).size === free.length, at('freeSlots'), 'distinct slots no member holds');
  need(slots.size + free.length === c.alive.length, at('alive'), `one byte per slot (${slots.size + free.length}), got ${c.alive.length}`);
  for (const s of free) need(c.alive[s] === 0, at('alive'), 'zero on every free slot');
  let alive = 0;
  for (const m of c.members.values()) if (c.alive[m.slot] === 1) alive++;
  for (const b of c.alive) need(b === 0 || b === 1, at('alive'), 'bytes of 0 or 1');
  need(c.aliveCount === alive, at('aliveCount'), `${alive}, as alive gives`);
  const inPlan = new Set(planNodeIds(c.plan));
  need(c.inPlan instanceof Set && c.inPlan.size === inPlan.size && [...inPlan].every((id) => c.inPlan.has(id)), at('inPlan'), 'the nodes the plan uses');
  let planDown = 0;
  for (const id of inPlan) if (!isAliveIn(c, id)) planDown++;
  need(c.planDownCount === planDown, at('planDownCount'), `${planDown}, as the plan and alive give`);
  const wanted = c.wanted;
  need(wanted instanceof Map && wanted.size === c.plan.models.length && c.plan.models.every((m) => wanted.get(m.id) === (m.pipelines ?? 1)), at('wanted'), "each model's pipelines, as the plan gives");
  const downSet = (set: unknown) => set instanceof Set && [...set].every((id) => typeof id === 'string' && c.members.has(id) && !isAliveIn(c, id));
  need(downSet(c.detected), at('detected'), 'a Set of members that are down');
  need(downSet(c.ejected) && [...c.ejected].every((id) => !c.detected.has(id)), at('ejected'), 'a Set of members that are down, none also detected');
  // Absent in a save from before the cause existed: none quarantined.
  need(c.quarantined === undefined || (downSet(c.quarantined) && [...c.quarantined].every((id) => !c.detected.has(id) && !c.ejected.has(id))), at('quarantined'), 'a Set of members that are down, none also detected or ejected');
  need(Number.isInteger(c.idState) && c.idState >= 0 && c.idState < 2 ** 32, at('idState'), 'a 32-bit counter');
  need(c.alpha === (config.alpha ?? 0.3), at('alpha'), `${config.alpha ?? 0.3}, from the config`);
  need(c.allowDegraded === (config.allowDegraded ?? true), at('allowDegraded'), `${config.allowDegraded ?? true}, from the config`);
  need(canonicalJson(c.ejection) === canonicalJson(resolveEjectionOptions(config.ejection)), at('ejection'), 'the ejection settings the config gives');
  need(canonicalJson(c.failureDetector ?? null) === canonicalJson(config.failureDetector ?? null), at('failureDetector'), 'the failure detector settings the config gives');
  const o = c.outcome as unknown;
  need(o === undefined || (isRecordLike(o) && ['rescue', 'revival', 'growth', 'retirement', 'refused'].includes((o as { kind?: string }).kind as string)), at('outcome'), 'absent or a decision');
}

/**
 * Applies one lifecycle event in its wire form, as a replicated log carries it: `node.added`
 * (`addNode`), `node.removed` (`removeNode`), `node.down` with its cause (`manual`: `markDown`;
 * `detector`; `ejected`, granted while under the ejection cap; `integrity`: `quarantine`) and `node.alive` with its cause.
 * Returns what the matching method returns. A no-op (a node already down) changes nothing; a
 * refused event throws the same error on every replica and changes nothing either
 * (docs/persistence.md).
 * @throws {SwarmError} `InvalidInput` for a malformed event, and what the matching method throws
 * @example applyEvent(swarm, { type: 'node.down', nodeId: 'gpu', cause: 'detector' });
 */
export function applyEvent(swarm: Swarm, event: LifecycleEvent): Rescue | Revival | Growth | Retirement {
  const internals = internalsOf(swarm, 'applyEvent');
  const { type, nodeId, cause = 'manual', profile } = (event ?? {}) as Partial<{ type: string; nodeId: string; cause: string; profile: NodeProfile }>;
  if (type === 'node.added') return internals.apply({ type, profile: profile as NodeProfile });
  const causes = type === 'node.down' ? ['manual', 'detector', 'ejected', 'integrity'] : type === 'node.alive' ? ['manual', 'heartbeat', 'probation'] : type === 'node.removed' ? ['manual'] : [];
  const bad = causes.length === 0 ? 'type' : typeof nodeId !== 'string' ? 'nodeId' : causes.includes(cause) ? undefined : 'cause';
  if (bad !== undefined) throw new SwarmError('InvalidInput', `lifecycle event field "${bad}": got ${describeValue((event as unknown as Record<string, unknown> | null)?.[bad])} (docs/persistence.md)`);
  return internals.apply({ type, nodeId, cause } as LifecycleEvent);
}
