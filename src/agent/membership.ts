/**
 * The agent's membership of a swarm (docs/engine.md, "Join and heartbeat"): it joins an
 * orchestrator (retrying until one answers), heartbeats every `heartbeatMs`, joins again when the
 * orchestrator forgot it, moves to the next orchestrator of a replicated swarm when one cannot be
 * reached, and leaves on {@link Membership.leave}. Signed, it asks the orchestrator before each
 * join what to sign for (`GET /v1/audience`), and joins again when a heartbeat is refused for it
 * (the orchestrator restarted).
 */
import type { Clock } from '../runtime/types.js';
import type { PeerPost } from '../net/peer-post.js';
import { AUDIENCE_PATH, type HeartbeatBody, type JoinBody } from '../wire/member-protocol.js';
import { SIGNATURE_HEADERS } from '../wire/request-signing.js';
import { ServeError } from '../wire/serve-error.js';
import { timerDelay } from '../wire/stage-bounds.js';

/** What {@link startMembership} needs. */
export interface MembershipOptions {
  /** The orchestrators' base URLs, in order of preference (at least one). */
  readonly bases: readonly string[];
  /** The join's body: the agent's id, memory, score, slots and URL. */
  readonly profile: JoinBody;
  readonly heartbeatMs: number;
  /** Signed over the configured TLS (peer-post.ts). */
  readonly post: PeerPost;
  /** Whether `post` signs: then each join first asks the orchestrator its audience. @defaultValue false */
  readonly signed?: boolean;
  /** The first join waits this long (the agent takes no call sooner: stage-guard.ts). @defaultValue 0 */
  readonly delayMs?: number;
  /** Times the join retries and the heartbeats. */
  readonly clock: Clock;
  readonly log: (line: string) => void;
  /** While it answers false, no heartbeat is sent (an upstream engine that fails its health check): the swarm's detector takes the agent down. */
  readonly healthy?: () => boolean;
  /** What each heartbeat reports (the engine's KV bytes: the orchestrator's `/metrics` shows them per agent). @defaultValue nothing */
  readonly report?: () => HeartbeatBody;
}

/** A running membership. */
export interface Membership {
  /** Resolves once an orchestrator accepted the join; rejects if one refused it (4xx). */
  readonly joined: Promise<void>;
  /** The swarm's models (layers by id), as the last join's answer gave them; undefined before. */
  models(): ReadonlyMap<string, number> | undefined;
  /** The orchestrator it talks to now. */
  orchestrator(): string;
  /** What its requests are signed for (`GET /v1/audience` of the orchestrator joined); null unsigned; undefined while not yet learnt. */
  audience(): string | null | undefined;
  /** Stops the heartbeats and leaves (best effort, bounded). */
  leave(): Promise<void>;
}

/** Joins `options.bases` (the first that answers) and heartbeats until {@link Membership.leave}. */
export function startMembership(options: MembershipOptions): Membership {
  const { bases, profile, heartbeatMs, clock, log } = options;
  if (bases.length === 0) throw new ServeError('InvalidRequest', 400, 'startAgent needs at least one orchestrator URL in join', { field: 'join' });
  const path = `/v1/nodes/${encodeURIComponent(profile.id)}`;
  let current = 0;
  let models: Map<string, number> | undefined;
  let stopped = false;
  let rejoining = false;
  let timer: unknown;
  const base = (): string => bases[current] as string;
  /** What the requests are signed for: `GET /v1/audience` of the orchestrator joined (null: unsigned). */
  let firstDelayMs = options.delayMs ?? 0;
  let audience: string | null | undefined = options.signed === true ? undefined : null;
  const post = (to: number, route: string, body: unknown, timeoutMs: number) => options.post(`${bases[to]}${route}`, JSON.stringify(body), AbortSignal.timeout(timeoutMs), 'POST', 'application/json', audience ?? null);
  /** Asks orchestrator `to` its audience; a request refused for it asks again at the next join. */
  const learn = async (to: number): Promise<void> => {
    if (options.signed !== true) return;
    const response = await options.post(`${bases[to]}${AUDIENCE_PATH}`, '', AbortSignal.timeout(5000), 'GET', 'application/json', null);
    const answer = (await response.json().catch(() => undefined)) as { audience?: unknown } | undefined;
    if (!response.ok || typeof answer?.audience !== 'string') throw new Error(`GET ${AUDIENCE_PATH}: ${response.status}, no audience (an orchestrator older than signing protocol 2?)`);
    audience = answer.audience;
  };
  const sleep = (ms: number) => new Promise<void>((resolve) => clock.setTimeout(() => resolve(), timerDelay(ms)));
  /** `failed` could not be reached: the next orchestrator, if it is still the one we talk to. */
  const failOver = (failed: number, what: string): boolean => {
    if (bases.length === 1 || failed !== current) return false;
    current = (current + 1) % bases.length;
    log(`${what}: ${bases[failed]} unreachable; now talking to ${base()}`);
    return true;
  };

  const join = async (): Promise<void> => {
    const delayMs = firstDelayMs;
    firstDelayMs = 0;
    if (delayMs > 0) await sleep(delayMs);
    for (let attempt = 0; !stopped; attempt++) {
      const to = current;
      try {
        await learn(to);
        const response = await post(to, '/v1/nodes', profile, 5000);
        if (response.ok) {
          models = joinedModels(await response.json().catch(() => undefined));
          log(`joined ${bases[to]} as "${profile.id}" (${profile.url})`);
          return;
        }
        const text = await response.text();
        if (response.status >= 400 && response.status < 500) throw new Error(`the orchestrator refused the join: ${response.status} ${text}`);
        log(`join: ${response.status} ${text}; retrying`);
        // A replica cut off from its swarm's log answers 503: try another.
        failOver(to, 'join');
      } catch (error) {
        if (error instanceof Error && error.message.startsWith('the orchestrator refused')) throw error;
        if (!failOver(to, 'join') && (attempt === 0 || attempt % 20 === 0)) log(`join: ${bases[to]} unreachable (${describe(error)}); retrying`);
      }
      await sleep(250);
    }
  };

  // Heartbeats never wait for the previous one: after a stall (SIGSTOP, a long GC) the overdue
  // beat goes out at once, even if the one before is still being answered.
  // An orchestrator that cannot be reached is left for the next one at once, and the beat is sent
  // there right away (once: if every one is unreachable, the next beat is the next try).
  const beat = async (retry = false): Promise<void> => {
    if (stopped || rejoining || options.healthy?.() === false) return;
    const to = current;
    try {
      const response = await post(to, `${path}/heartbeat`, options.report?.() ?? {}, heartbeatMs * 2);
      const replied = await response.text();
      // 503: it cannot serve (a replica cut off from its swarm's log): the next one, at once.
      if (response.status === 503 && failOver(to, 'heartbeat')) {
        if (!retry) void beat(true);
        return;
      }
      // 401, 409: not trusted (another swarm secret; the id bound to another key): say so, keep beating.
      if (response.status === 401 || response.status === 409) log(`heartbeat refused: ${response.status} ${replied.slice(0, 300)}`);
      // 404: the orchestrator does not know us (it restarted, or we left); 401 for the audience: it
      // restarted (an orchestrator alone has a new one each start). Join again.
      if (response.status === 404 || (response.status === 401 && replied.includes(`"field":"${SIGNATURE_HEADERS.audience}"`))) {
        rejoining = true;
        await join().finally(() => {
          rejoining = false;
        });
      }
    } catch (error) {
      log(`heartbeat: ${describe(error)}`);
      if (failOver(to, 'heartbeat') && !retry) void beat(true);
    }
  };

  const joined = join().then(() => {
    if (stopped) return;
    void beat();
    // Every heartbeatMs, as an interval would: the next beat is scheduled before this one is sent.
    const every = (): void => {
      timer = clock.setTimeout(() => {
        if (stopped) return;
        every();
        void beat();
      }, heartbeatMs);
    };
    every();
  });
  joined.catch(() => {}); // observed by the caller; never an unhandled rejection

  return {
    joined,
    models: () => models,
    orchestrator: base,
    audience: () => audience,
    async leave() {
      if (stopped) return;
      stopped = true;
      if (timer !== undefined) clock.clearTimeout(timer);
      try {
        if (audience === undefined) return; // never joined: nothing to leave
        const response = await post(current, `${path}/leave`, {}, 2000);
        await response.arrayBuffer();
      } catch (error) {
        log(`leave: ${describe(error)}`);
      }
    },
  };
}

/** The models of a join's answer (`{ models: [{ id, layers }] }`), or undefined if it has none (an older orchestrator). */
function joinedModels(answer: unknown): Map<string, number> | undefined {
  const list = (answer as { models?: unknown } | null | undefined)?.models;
  if (!Array.isArray(list)) return undefined;
  const models = new Map<string, number>();
  for (const m of list as { id?: unknown; layers?: unknown }[]) if (typeof m?.id === 'string' && Number.isInteger(m.layers)) models.set(m.id, m.layers as number);
  return models.size > 0 ? models : undefined;
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    return cause?.code ?? error.message;
  }
  return String(error);
}
