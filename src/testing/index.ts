/**
 * `hecate-swarm/testing`: model-based tests of a swarm, generated from the Swarm statechart with
 * `@xstate/graph` (a dependency of the package: 150 KB, no dependencies of its own).
 *
 * `swarmTestModel(profiles, config)` is a `TestModel` whose generated paths carry complete
 * events (`node.added` with its profile); `runSwarmPath(path, swarm)` plays one path against a
 * `Swarm` — or anything with the same methods — and checks the status after every step.
 *
 * Also here: `ManualClock` (a clock that moves only when told) and `seededIds` (a seeded id
 * source), so a run is deterministic.
 * @packageDocumentation
 */
export { ManualClock, seededIds } from '../runtime/index.js';
import { TestModel, type StatePath } from '@xstate/graph';
import { initialTransition, type SnapshotFrom } from 'xstate';
import { aliveMembers, swarmMachine, type MoveOrder, type SwarmEvent, type SwarmInput } from '../../machines/swarm.machine.js';
import { kInternals } from '../runtime/internal.js';
import { planSwarm } from '../core/plan.js';
import type { NodeProfile } from '../core/types.js';
import type { SwarmConfig } from '../runtime/types.js';

/** A snapshot of the Swarm statechart. */
export type SwarmSnapshot = SnapshotFrom<typeof swarmMachine>;

/** One generated path: the events from the initial state and the snapshot after each. */
export type SwarmPath = StatePath<SwarmSnapshot, SwarmEvent>;

/** Options of {@link swarmTestModel}. */
export interface SwarmTestModelOptions {
  /** Profiles that may join, each a `node.added` event while it is not a member. @defaultValue [] */
  readonly newcomers?: readonly NodeProfile[];
  /** Whether members may leave (`node.removed` events). @defaultValue true */
  readonly removals?: boolean;
  /** Seeds the pipeline ids the statechart mints, like `createSwarm`'s `seed`. @defaultValue 1 */
  readonly seed?: number;
  /**
   * Rebalances to try (docs/rebalance.md): each a `rebalance.begin` with these orders while no move
   * is pending; then `span.loaded` of each node still loading, one `span.failed` of each loading
   * move, and `copy.drained` of each draining move. The graph state then also holds each pending move's phase and the nodes it waits on.
   * @defaultValue [] (no move events)
   */
  readonly rebalances?: readonly (readonly MoveOrder[])[];
}

/**
 * What a path runs against: a `Swarm`, or any object with the same methods (a client of a remote
 * orchestrator, a fake under test).
 */
export interface SwarmLike {
  markDown(nodeId: string): unknown;
  markAlive(nodeId: string): unknown;
  addNode(profile: NodeProfile): unknown;
  removeNode(nodeId: string): unknown;
  stop(): unknown;
  status(): string;
  /** Takes a rebalance's move event (`rebalance.begin`, `span.loaded`, `span.failed`, `copy.drained`); a `Swarm` takes them without it. */
  move?(event: SwarmEvent): unknown;
}

/** A path whose status differs from the statechart's after a step. */
export class SwarmPathError extends Error {
  override readonly name = 'SwarmPathError';
  readonly code = 'StatusMismatch' as const;
}

/**
 * The input the model starts from, built from public functions only:
 * `{ plan: planSwarm(profiles, config), profiles, … }`: data only.
 */
export function swarmInput(profiles: readonly NodeProfile[], config: SwarmConfig, seed = 1): SwarmInput {
  const plan = planSwarm(profiles, config);
  return {
    plan,
    profiles,
    ...(config.alpha !== undefined ? { alpha: config.alpha } : {}),
    ...(config.allowDegraded !== undefined ? { allowDegraded: config.allowDegraded } : {}),
    idSeed: seed,
  };
}

/**
 * The state a path reaches, as the graph tells states apart: the status, each member's liveness,
 * and — after a status change — the status it came from, so every status transition gets a path
 * (and after a failed load, that it failed).
 * EWMAs, plans and rescues stay out of it, so the state space is finite; with `rebalances`, the
 * pending moves' phases and the plan's copies are in it (finitely many: the orders are fixed).
 */
function serialize(state: SwarmSnapshot, event?: SwarmEvent, previous?: SwarmSnapshot, withPlan = false): string {
  const members = [...aliveMembers(state.context)].map(([id, alive]) => `${JSON.stringify(id)}:${alive ? 1 : 0}`);
  const from = previous !== undefined && previous.value !== state.value ? `|from ${String(previous.value)}` : '';
  const moves = [...(state.context.moves ?? [])].map(([id, m]) => `${id}:${m.phase}:${[...m.waiting].sort().join('+')}`).sort();
  // With rebalances, the plan tells states apart too: a move's last step ends where it began but for the plan.
  const plan = withPlan ? `|plan ${state.context.plan.pipelines.map((p) => `${p.id}=${p.stages.map((s) => `${s.nodeId}@${s.layerStart}-${s.layerEnd}`).join('+')}`).join(',')}` : '';
  // A failed load ends where its move began (make-before-break): told apart, so a path takes it.
  const failed = event?.type === 'span.failed' ? '|failed' : '';
  return `${String(state.value)}|${members.sort().join(',')}${from}${moves.length > 0 ? `|moves ${moves.join(',')}` : ''}${plan}${failed}`;
}

/** Every event worth trying from a state, each with its full payload. */
function eventsFrom(state: SwarmSnapshot, newcomers: readonly NodeProfile[], removals: boolean, rebalances: readonly (readonly MoveOrder[])[] = []): SwarmEvent[] {
  if (state.status !== 'active') return [];
  const events: SwarmEvent[] = [];
  for (const [nodeId, alive] of aliveMembers(state.context)) {
    events.push(alive ? { type: 'node.down', nodeId } : { type: 'node.alive', nodeId });
    if (removals) events.push({ type: 'node.removed', nodeId });
  }
  for (const profile of newcomers) if (!state.context.members.has(profile.id)) events.push({ type: 'node.added', profile });
  const pending = state.context.moves;
  if (pending === undefined) for (const moves of rebalances) events.push({ type: 'rebalance.begin', moves });
  for (const [moveId, m] of pending ?? []) {
    if (m.phase === 'loading') for (const nodeId of m.waiting) events.push({ type: 'span.loaded', moveId, nodeId });
    // One failed load per loading move (it aborts the move whichever node failed).
    if (m.phase === 'loading' && m.waiting[0] !== undefined) events.push({ type: 'span.failed', moveId, nodeId: m.waiting[0], reason: 'the loader failed' });
    if (m.phase === 'draining') events.push({ type: 'copy.drained', moveId });
  }
  events.push({ type: 'swarm.stop' });
  return events;
}

/**
 * A `TestModel` over the Swarm statechart for these profiles and config: every path it generates
 * (`getShortestPaths()`, `getSimplePaths()`) is a sequence of complete events — `node.down`,
 * `node.alive`, `node.removed` of members, `node.added` of the `newcomers`, `swarm.stop` — with
 * the snapshot the statechart reaches after each.
 * @example
 * const model = swarmTestModel(profiles, config);
 * for (const path of model.getShortestPaths()) runSwarmPath(path, createSwarm(profiles, config));
 */
export function swarmTestModel(profiles: readonly NodeProfile[], config: SwarmConfig, options: SwarmTestModelOptions = {}): TestModel<SwarmSnapshot, SwarmEvent, SwarmInput> {
  const newcomers = options.newcomers ?? [];
  const removals = options.removals ?? true;
  const [initial] = initialTransition(swarmMachine, swarmInput(profiles, config, options.seed ?? 1));
  // Cast: @xstate/graph's ActorLogic type does not admit a machine with typed emitted events.
  return new TestModel<SwarmSnapshot, SwarmEvent, SwarmInput>(swarmMachine as unknown as ConstructorParameters<typeof TestModel<SwarmSnapshot, SwarmEvent, SwarmInput>>[0], {
    fromState: initial,
    serializeState: (state, event, previous) => serialize(state, event, previous, (options.rebalances?.length ?? 0) > 0),
    serializeEvent: (event) => JSON.stringify(event),
    events: (state) => eventsFrom(state, newcomers, removals, options.rebalances),
  });
}

function describe(event: SwarmEvent): string {
  if (event.type === 'rebalance.begin') return `rebalance.begin(${event.moves.map((m) => m.id).join(',')})`;
  if (event.type === 'span.loaded' || event.type === 'span.failed') return `${event.type}(${event.moveId}@${event.nodeId})`;
  if (event.type === 'copy.drained') return `copy.drained(${event.moveId})`;
  return event.type === 'node.added' ? `node.added(${event.profile.id})` : 'nodeId' in event ? `${event.type}(${event.nodeId})` : event.type;
}

/**
 * A short name for a path: its events and the status it ends in, e.g.
 * `node.down(gpu) → node.alive(gpu) ⇒ healthy`; `start ⇒ healthy` for the empty path.
 */
export function pathName(path: Pick<SwarmPath, 'steps'>): string {
  const events = path.steps.map((s) => s.event as SwarmEvent | { type: 'xstate.init' }).filter((e): e is SwarmEvent => e.type !== 'xstate.init');
  const last = path.steps[path.steps.length - 1];
  return `${events.length === 0 ? 'start' : events.map(describe).join(' → ')} ⇒ ${String(last?.state.value)}`;
}

/**
 * Plays one generated path against `swarm` — `markDown`, `markAlive`, `addNode`, `removeNode`,
 * `stop` for its events — and checks after the start and after every step that `swarm.status()`
 * is the status the statechart reached.
 * @throws {SwarmPathError} `StatusMismatch`, naming the step, the events so far and both statuses
 */
export function runSwarmPath(path: Pick<SwarmPath, 'steps'>, swarm: SwarmLike): void {
  const done: string[] = [];
  for (const step of path.steps) {
    const event = step.event as SwarmEvent | { type: 'xstate.init' };
    switch (event.type) {
      case 'xstate.init':
        break;
      case 'node.down':
        swarm.markDown(event.nodeId);
        break;
      case 'node.alive':
        swarm.markAlive(event.nodeId);
        break;
      case 'node.added':
        swarm.addNode(event.profile);
        break;
      case 'node.removed':
        swarm.removeNode(event.nodeId);
        break;
      case 'swarm.stop':
        swarm.stop();
        break;
      // A move's events: what the rebalancer's runner sends a running Swarm's statechart (docs/rebalance.md).
      case 'rebalance.begin':
      case 'span.loaded':
      case 'span.failed':
      case 'copy.drained':
        moveEvent(swarm, event);
        break;
    }
    if (event.type !== 'xstate.init') done.push(describe(event));
    const want = String(step.state.value);
    const got = swarm.status();
    if (got !== want) {
      throw new SwarmPathError(`after ${done.length === 0 ? 'the start' : done.join(' → ')}: status "${got}", the statechart says "${want}"`);
    }
  }
}

/** Sends a move's event to what a path runs against: its `move` method, else a Swarm's statechart. */
function moveEvent(swarm: SwarmLike, event: SwarmEvent): void {
  if (typeof swarm.move === 'function') return void swarm.move(event);
  const internals = (swarm as { [kInternals]?: { actor: { send(e: SwarmEvent): void } } })[kInternals];
  if (internals === undefined) throw new SwarmPathError(`${event.type}: this swarm has no move(event) method and is no Swarm`);
  internals.actor.send(event);
}
