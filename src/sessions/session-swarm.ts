/**
 * Sessions on a Swarm (`hecate-swarm/sessions`, docs/sessions.md): the session host over a
 * swarm, `openSession`/`executeOnce` on a swarm or any host, and `SessionSwarm`, a Swarm with
 * `session` and `execute` methods. Kept out of the root entry: a swarm that only routes does not
 * carry the session engine. The host reaches the Swarm's internals through their module symbol
 * (`src/runtime/internal.ts`).
 */
import { resolveRequest } from '../core/cost.js';
import { describeValue } from '../core/describe.js';
import { SwarmError } from '../core/errors.js';
import type { NodeProfile, Route } from '../core/types.js';
import { Session } from './session.js';
import { timerClock } from './session-options.js';
import type { SessionHost, SessionOptions, StageRunner } from './session-types.js';
import { kInternals } from '../runtime/internal.js';
import { Swarm } from '../runtime/swarm.js';
import type { LeasedRoute, SwarmConfig, SwarmOptions, SwarmRequest } from '../runtime/types.js';

/**
 * The session host over a swarm: routes and reserves on it, releases to it, and tells a running
 * stage call of its node going down when the swarm marks it, not at its next poll.
 */
export function swarmSessionHost(swarm: Swarm): SessionHost {
  if (!(swarm instanceof Swarm)) throw new SwarmError('InvalidInput', `swarmSessionHost needs a Swarm (made by createSwarm), got ${describeValue(swarm)}`);
  const internals = swarm[kInternals];
  internals.running(); // throws Stopped
  // Reserved apart from route(): a session's steps do not come back to the swarm, so its nodes wait for none.
  const reserve = (route: Route): LeasedRoute => internals.reserved(route);
  return {
    route: (r) => reserve(swarm.route(r)),
    reserve: (route, request) => {
      if (request !== undefined) internals.learn(route, request); // after a failover (docs/prefix-cache.md)
      return reserve(route);
    },
    release: (lease, outcome) => swarm.release(lease, outcome),
    state: () => swarm.state(),
    clock: timerClock(internals.clock),
    assertRunning: () => internals.running(),
    watch: (nodeId, onDown) => internals.watchDown(nodeId, onDown),
    admit: (request, options, route) => {
      if (route !== undefined) internals.learn(route, request); // a resumed route: its copy learns the history (docs/prefix-cache.md)
      return internals.admission.admit(request, options, route);
    },
    // The route before admission is a placeholder its lease replaces: chosen without the prompt, so
    // the prefix-cache index records the prompt only under the lease admission grants, never on a
    // copy the session may not run on (docs/prefix-cache.md, "Admission"). Its tokens stay.
    choose: (request) => ({ route: swarm.route(withoutPrompt(request)), id: internals.mintId() }),
  };
}

/** `request` without its prompt, its tokens kept (the prompt's count when it gave none). */
function withoutPrompt(request: SwarmRequest): SwarmRequest {
  if (request.prompt === undefined) return request;
  const { prompt: _prompt, ...rest } = request;
  return { ...rest, tokens: resolveRequest(request).tokens };
}

/** A swarm's host (checked running), or the host given. */
function hostOf(on: Swarm | SessionHost): SessionHost {
  return on instanceof Swarm ? swarmSessionHost(on) : on;
}

/**
 * Opens a session on a swarm (or a host of your own): a generation run step by step on a
 * reserved route, resuming from the failed stage when a node fails (docs/sessions.md).
 * @throws {RoutingError} when the model has nothing to serve with; {@link SessionError} `InvalidInput`; {@link SwarmError} `Stopped`
 * @example
 * const session = openSession(swarm, { tokens: 512 }, (stage, x, { signal, replay }) => callNode(stage, x, replay, signal));
 * const y = await session.step(x); session.close();
 */
export function openSession<T>(on: Swarm | SessionHost, request: SwarmRequest, runStage: StageRunner<T>, options?: SessionOptions): Session<T> {
  return new Session(hostOf(on), request ?? {}, runStage, options ?? {});
}

/** A session of one step: routes, runs every stage once (resuming on a failure), releases. Resolves with the last stage's output. */
export async function executeOnce<T>(on: Swarm | SessionHost, request: SwarmRequest, input: T, runStage: StageRunner<T>, options?: SessionOptions): Promise<T> {
  const session = openSession(on, request, runStage, options); // in an async function: a stopped swarm rejects, as every failure does
  try {
    return await session.step(input);
  } finally {
    session.close();
  }
}

/** A Swarm with sessions: `swarm.session(…)` and `swarm.execute(…)`. Create it with {@link createSessionSwarm}. */
export class SessionSwarm extends Swarm {
  /**
   * Opens a session: a generation run step by step on a reserved route, resuming from the failed
   * stage when a node fails (docs/sessions.md).
   * @throws {RoutingError} when the model has nothing to serve with
   * @example
   * const session = swarm.session({ tokens: 512 }, (stage, x, { signal, replay }) => callNode(stage, x, replay, signal));
   * const y = await session.step(x); session.close();
   */
  session<T>(request: SwarmRequest, runStage: StageRunner<T>, options?: SessionOptions): Session<T> {
    return openSession(this, request, runStage, options);
  }

  /** A session of one step: routes, runs every stage once (resuming on a failure), releases. Resolves with the last stage's output; every failure rejects. */
  execute<T>(request: SwarmRequest, input: T, runStage: StageRunner<T>, options?: SessionOptions): Promise<T> {
    return executeOnce(this, request, input, runStage, options);
  }
}

/**
 * `createSwarm` of the root entry, returning a {@link SessionSwarm}: the same swarm, with
 * `session` and `execute`.
 * @example
 * import { createSessionSwarm } from 'hecate-swarm/sessions';
 * const swarm = createSessionSwarm(profiles, swarmConfig(12, 2));
 * const y = await swarm.execute({ tokens: 16 }, x, runStage);
 */
export function createSessionSwarm(profiles: readonly NodeProfile[], config: SwarmConfig, options: SwarmOptions = {}): SessionSwarm {
  return new SessionSwarm(profiles, config, options);
}
