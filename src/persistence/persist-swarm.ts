/**
 * Persistence of a swarm's lifecycle state (`hecate-swarm/persistence`, docs/persistence.md):
 * persist it as plain JSON, restore a swarm from it, digest it, and apply lifecycle events in
 * their wire form, as a replicated log carries them. Kept out of the root entry: a swarm that
 * only routes does not carry it. These functions reach a few of the Swarm's own members by name
 * (`swarm['running']`, typed), and nothing else does.
 */
import type { AliveCause } from '../../machines/node.machine.js';
import type { LiveStatus } from '../../machines/swarm.machine.js';
import { describeValue } from '../core/describe.js';
import { canonicalJson, hashText } from '../core/digest.js';
import { SwarmError } from '../core/errors.js';
import { deepFreeze } from '../core/freeze.js';
import { swarmConfigIssue, swarmOptionsIssue } from '../core/swarm-config.js';
import type { NodeProfile } from '../core/types.js';
import { lifecycleDigest, memberState, plainProfile, readPersisted, type LifecycleEvent, type PersistedMember, type PersistedSwarm } from './persisted.js';
import { Swarm } from '../runtime/swarm.js';
import type { Growth, Rescue, Retirement, Revival, SwarmConfig, SwarmOptions } from '../runtime/types.js';

/** The digests of the profiles and the config a swarm was created with. */
function genesisDigests([profiles, config]: readonly [readonly NodeProfile[], SwarmConfig]): [string, string] {
  return [hashText(canonicalJson(profiles)), hashText(canonicalJson(config))];
}

/** Status, members (with their node actors' ejection records), id counter and digest. */
function lifecycle(swarm: Swarm): [LiveStatus, PersistedMember[], number | null, string] {
  const snapshot = swarm.actor.getSnapshot();
  const c = snapshot.context;
  const members: PersistedMember[] = [];
  for (const [id, m] of c.members) {
    const { failures, ejections, probation } = m.ref.getSnapshot().context.health;
    const state = memberState(c, id, m.slot);
    members.push(failures > 0 || ejections > 0 || probation ? { profile: m.profile, state, record: { failures, ejections, probation } } : { profile: m.profile, state });
  }
  const ids = c.idSource === undefined ? c.idState : null;
  const status = snapshot.value as LiveStatus;
  return [status, members, ids, lifecycleDigest(c.plan, status, members.map((m) => [m.profile, m.state]), ids)];
}

/**
 * The swarm's lifecycle state as plain JSON: plan, members with their liveness (and why down)
 * and ejection records, status, the seeded id counter and the last decision. Telemetry EWMAs,
 * leases, release windows and heartbeat histories are local observations and are left out.
 * {@link restoreSwarm} continues from it (docs/persistence.md).
 * @throws {SwarmError} `Stopped`
 * @example const saved = JSON.stringify(persistSwarm(swarm));
 */
export function persistSwarm(swarm: Swarm): PersistedSwarm {
  const { plan, outcome } = swarm['running']().context;
  const [status, members, ids, digest] = lifecycle(swarm);
  const [profiles, config] = genesisDigests(swarm['genesis']);
  // A growth's or a retirement's plan is the plan: not stored twice.
  const last = outcome?.kind === 'growth' || outcome?.kind === 'retirement' ? { ...outcome, plan: undefined } : (outcome ?? null);
  return deepFreeze(JSON.parse(JSON.stringify({ format: 'hecate-swarm/swarm', version: 1, profiles, config, status, plan, members, ids, outcome: last, digest })) as PersistedSwarm);
}

/**
 * A short stable hash (16 hex digits) of the plan, the status, every member's profile and
 * liveness (and why down) and the seeded id counter: equal on swarms that applied the same
 * lifecycle events, in any process; local telemetry does not enter it.
 * @example swarmDigest(a) === swarmDigest(b)
 */
export function swarmDigest(swarm: Swarm): string {
  return lifecycle(swarm)[3];
}

/**
 * Creates and starts a swarm from a persisted one (`persistSwarm`) instead of planning anew: the
 * same plan, members, liveness, status, id counter and last decision. It must come from a swarm
 * created with the same `profiles` and `config` (their digests are checked); `options` are
 * `createSwarm`'s but `seed` and `idSource` when the snapshot has its id counter
 * (docs/persistence.md).
 * @throws {SwarmError} `InvalidInput` naming the first bad field of the snapshot or option
 * @example const swarm = restoreSwarm(profiles, config, JSON.parse(saved));
 */
export function restoreSwarm(profiles: readonly NodeProfile[], config: SwarmConfig, persisted: PersistedSwarm, options: SwarmOptions = {}): Swarm {
  const given = Array.isArray(profiles) ? profiles.map(plainProfile) : profiles;
  const issue = swarmConfigIssue(config) ?? swarmOptionsIssue(options);
  if (issue !== undefined) throw new SwarmError('InvalidInput', issue);
  let digests: [string, string];
  try {
    digests = genesisDigests([given, config]);
  } catch (error) {
    throw new SwarmError('InvalidInput', `restoreSwarm: the profiles must be plain JSON data, as createSwarm was given (${error instanceof Error ? error.message : String(error)})`);
  }
  const restored = readPersisted(persisted, ...digests);
  if (restored.ids !== null && (options.seed ?? options.idSource) !== undefined) throw new SwarmError('InvalidInput', 'options "seed" and "idSource" cannot go with a persisted swarm: it has its id counter');
  return new Swarm(profiles, config, options, restored);
}

/**
 * Applies one lifecycle event in its wire form, as a replicated log carries it: `node.added`
 * (`addNode`), `node.removed` (`removeNode`), `node.down` with its cause (`manual`: `markDown`;
 * `detector`; `ejected`, granted while under the ejection cap) and `node.alive` with its cause.
 * Returns what the matching method returns. A no-op (a node already down) changes nothing; a
 * refused event throws the same error on every replica and changes nothing either
 * (docs/persistence.md).
 * @throws {SwarmError} `InvalidInput` for a malformed event, and what the matching method throws
 * @example applyEvent(swarm, { type: 'node.down', nodeId: 'gpu', cause: 'detector' });
 */
export function applyEvent(swarm: Swarm, event: LifecycleEvent): Rescue | Revival | Growth | Retirement {
  const { type, nodeId, cause = 'manual', profile } = (event ?? {}) as Partial<{ type: string; nodeId: string; cause: string; profile: NodeProfile }>;
  if (type === 'node.added') return swarm.addNode(profile as NodeProfile);
  const causes = type === 'node.down' ? ['manual', 'detector', 'ejected'] : type === 'node.alive' ? ['manual', 'heartbeat', 'probation'] : type === 'node.removed' ? ['manual'] : [];
  const bad = causes.length === 0 ? 'type' : typeof nodeId !== 'string' ? 'nodeId' : causes.includes(cause) ? undefined : 'cause';
  if (bad !== undefined) throw new SwarmError('InvalidInput', `lifecycle event field "${bad}": got ${describeValue((event as unknown as Record<string, unknown> | null)?.[bad])} (docs/persistence.md)`);
  const id = nodeId as string;
  if (type === 'node.removed') return swarm.removeNode(id);
  // `logged`: from the log, so a replica (option `propose`) applies it rather than proposing it again.
  if (type === 'node.alive') return swarm['revive'](id, cause as AliveCause, true);
  return swarm['takeDown'](id, cause === 'ejected' ? { type: 'node.eject', nodeId: id, logged: true } : { type: 'node.down', nodeId: id, cause: cause as 'manual' | 'detector', logged: true });
}
