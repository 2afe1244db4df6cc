/**
 * The stage server of `hecate-node agent` (docs/engine.md): it serves stage calls to a
 * {@link StageEngine} (the stand-in digest engine unless another is given), joins an orchestrator
 * and heartbeats (membership.ts), runs calls in its slots (stage-slots.ts), drops sessions the
 * orchestrator ended (drop-route.ts), answers its health (health-route.ts), and leaves on `stop()`.
 */
import type { FastifyInstance } from 'fastify';
import { systemClock } from '../runtime/clock.js';
import type { Clock, TimeSource } from '../runtime/types.js';
import type { AgentKey } from '../wire/agent-key.js';
import { guardStageCalls } from './stage-guard.js';
import { createHttpApp, listen } from '../net/http-app.js';
import { DEFAULT_CONNECTION_LIMITS } from '../net/connection-limits.js';
import { stageRequestBounds } from '../wire/stage-protocol.js';
import { registerDropRoute } from './drop-route.js';
import { registerLoadRoute } from './load-route.js';
import { SessionDrops } from './session-drops.js';
import { createPeerPoster } from '../net/peer-post.js';
import { ServeError } from '../wire/serve-error.js';
import { DEFAULT_MAX_STAGE_MS } from '../wire/stage-bounds.js';
import { hashText } from '../wire/digest.js';
import { DigestEngine } from './engines/digest-engine.js';
import { serverTls, type TlsOptions } from '../net/tls-options.js';
import type { StageEngine } from './stage-engine.js';
import { StageSlots } from './stage-slots.js';
import { registerStageRoute } from './stage-route.js';
import { heartbeatReport, registerHealthRoute } from './health-route.js';
import { startMembership } from './membership.js';
import { startKvReports } from './kv-reporter.js';
import { stageEngineAnswer } from './stage-engine-answer.js';

/** Options of {@link startAgent}. */
export interface AgentOptions {
  readonly id: string;
  readonly memoryGb: number;
  readonly score: number;
  /**
   * The engine stage calls are served to. The digest options below (`perLayerMs`, `jitter`,
   * `seed`, `lieRate`, `maxSessions`, `maxStageMs`, `kvCacheGb`) shape the default one only.
   * @defaultValue a {@link DigestEngine}
   */
  readonly engine?: StageEngine;
  /**
   * The orchestrator's base URL, e.g. `http://127.0.0.1:8080`, or several orchestrators of one
   * replicated swarm (docs/serve.md, "Several orchestrators"): the agent talks to one at a time and
   * moves to the next when it cannot reach it.
   */
  readonly join: string | readonly string[];
  /** @defaultValue 0 (any free port) */
  readonly port?: number;
  /** @defaultValue '127.0.0.1' */
  readonly host?: string;
  /** Real milliseconds one layer takes for one token at score 1. @defaultValue 2 */
  readonly perLayerMs?: number;
  /** Relative jitter of a call's time, in [0, 1). @defaultValue 0.2 */
  readonly jitter?: number;
  /** Seeds the jitter and the lies. @defaultValue a hash of the id */
  readonly seed?: number;
  /**
   * Tests and benches only: the share of stage calls answered with a wrong output (drawn from
   * `seed` and the call), a lying node for verification to catch (docs/security.md). @defaultValue 0
   */
  readonly lieRate?: number;
  /** @defaultValue 1000 */
  readonly heartbeatMs?: number;
  /** Sessions whose caches are kept; the least recently used is dropped past it. @defaultValue 4096 */
  readonly maxSessions?: number;
  /**
   * The longest a stage call may be computed to take; a longer one is refused (422, field
   * `tokens`) before it runs (docs/serve.md, "Limits"). @defaultValue 60000 (the orchestrator's deadline)
   */
  readonly maxStageMs?: number;
  /**
   * Stage calls it runs at once; later ones wait in arrival order (a GPU serving one batch at a
   * time). The reply's `ms` includes the wait. @defaultValue unlimited: every call runs at once
   */
  readonly slots?: number;
  /**
   * Times the stage work (its delay and the reply's `ms`), the join retries and the heartbeats.
   * The agent is its own process: its clock is not the orchestrator's. Request timeouts stay on
   * the host's timers. @defaultValue systemClock
   */
  readonly clock?: Clock;
  /**
   * The swarm secret and the agent's own key pair (docs/security.md): its joins, heartbeats and
   * leaves are signed with both, and stage calls not signed with the secret are refused (401).
   * `clock` stamps and checks the signatures: wall time. Without it nothing is signed or checked.
   */
  readonly auth?: { readonly secret: Uint8Array; readonly key: AgentKey; readonly clock?: TimeSource };
  /** Serve stage calls over https with `cert` and `key`; trust `ca` when calling the orchestrator. */
  readonly tls?: TlsOptions;
  /** Told about joins and failures to reach the orchestrator. */
  readonly log?: (line: string) => void;
  /**
   * KV memory kept for the prefixes of the prompts it ran, GB (engines/digest-prefix-cache.ts): a prompt's
   * cached leading tokens cost no prefill time. @defaultValue a quarter of `memoryGb`
   */
  readonly kvCacheGb?: number;
  /** Adds routes to its server before it listens (an upstream agent's: src/agent/upstream/). */
  readonly routes?: (app: FastifyInstance) => void;
  /** While this answers false no heartbeat goes out: what it fronts is down (docs/openai.md, "Health"). */
  readonly healthy?: () => boolean;
  /** An engine with a KV feed: how often its events are reported (docs/prefix-cache.md, "Precise mode"). @defaultValue 100 */
  readonly kvReportMs?: number;
}

/** A running agent. */
export interface RunningAgent {
  readonly id: string;
  /** Its own base URL, as it told the orchestrator. */
  readonly url: string;
  /** Resolves once the orchestrator accepted the join. */
  readonly joined: Promise<void>;
  /** The orchestrator it talks to now (the first of `join` until that one cannot be reached). */
  orchestrator(): string;
  /** Leaves the orchestrator (best effort, bounded), stops heartbeats and closes the server. */
  stop(): Promise<void>;
}

/** Starts an agent: listens, then joins `options.join` (retrying until it answers) and heartbeats. */
export async function startAgent(options: AgentOptions): Promise<RunningAgent> {
  const log = options.log ?? (() => {});
  const clock = options.clock ?? systemClock;
  const bases = (typeof options.join === 'string' ? [options.join] : [...options.join]).map((u) => u.replace(/\/+$/, ''));
  if (bases.length === 0) throw new ServeError('InvalidRequest', 400, 'startAgent needs at least one orchestrator URL in join', { field: 'join' });
  if (options.auth !== undefined && options.auth.key.id !== options.id) throw new ServeError('InvalidRequest', 400, `agent "${options.id}" was given the key of agent "${options.auth.key.id}"`, { field: 'auth' });
  const engine: StageEngine = options.engine ?? new DigestEngine({
    score: options.score,
    seed: options.seed ?? hashText(options.id),
    maxStageMs: options.maxStageMs ?? DEFAULT_MAX_STAGE_MS,
    kvCacheGb: options.kvCacheGb ?? options.memoryGb / 4,
    clock,
    ...(options.perLayerMs !== undefined ? { perLayerMs: options.perLayerMs } : {}),
    ...(options.jitter !== undefined ? { jitter: options.jitter } : {}),
    ...(options.lieRate !== undefined ? { lieRate: options.lieRate } : {}),
    ...(options.maxSessions !== undefined ? { maxSessions: options.maxSessions } : {}),
  });
  const slots = new StageSlots(options.slots);
  /** Running calls per session, and sessions dropped lately (docs/serve.md, "Cancellation"). */
  const drops = new SessionDrops(clock);

  // Two of its largest stage calls may be received at once, whatever the default budget.
  const maxBodyBytes = Math.max(DEFAULT_CONNECTION_LIMITS.maxBodyBytes, 2 * stageRequestBounds(engine.maxWidth ?? 1).maxBytes);
  const app: FastifyInstance = createHttpApp(serverTls(options.tls), stageEngineAnswer, { maxBodyBytes });
  const guard = options.auth !== undefined ? guardStageCalls(app, options.auth.secret, options.id, options.auth.clock) : undefined;
  registerHealthRoute(app, options.id, engine, slots, drops);
  registerDropRoute(app, options.id, drops, (sessionId) => engine.drop(sessionId));
  let models: () => ReadonlyMap<string, number> | undefined = () => undefined;
  registerLoadRoute(app, options.id, engine, clock, () => models(), log);
  registerStageRoute(app, { id: options.id, engine, slots, drops, clock, models: () => models(), ...(options.auth !== undefined ? { signer: { secret: options.auth.secret, clock: options.auth.clock ?? systemClock } } : {}) });
  options.routes?.(app);
  const url = await listen(app, options.host ?? '127.0.0.1', options.port ?? 0);

  const poster = createPeerPoster({ ...(options.auth !== undefined ? { signer: { secret: options.auth.secret, key: options.auth.key } } : {}), clock: options.auth?.clock ?? systemClock, ...(options.tls?.ca !== undefined ? { ca: options.tls.ca } : {}) });
  const profile = { id: options.id, memoryGb: options.memoryGb, score: options.score, ...(options.slots !== undefined ? { slots: options.slots } : {}), url };
  // It joins no sooner than it takes calls (stage-guard.ts: none stamped before then, after a restart).
  const delayMs = guard === undefined ? 0 : Math.max(0, guard.notBefore - (options.auth?.clock ?? systemClock).now());
  const membership = startMembership({ bases, profile, heartbeatMs: options.heartbeatMs ?? 1000, post: poster.post, signed: options.auth !== undefined, clock, log, delayMs, ...(options.healthy !== undefined ? { healthy: options.healthy } : {}), report: () => heartbeatReport(engine) });
  models = membership.models;

  let stopped = false;
  let kvReports: { stop(): void } | undefined;
  const feed = engine.kvFeed;
  if (feed !== undefined) {
    void membership.joined.then(() => {
      if (!stopped) kvReports = startKvReports({ id: options.id, feed, post: poster.post, orchestrator: membership.orchestrator, audience: membership.audience, clock, log, ...(options.kvReportMs !== undefined ? { everyMs: options.kvReportMs } : {}) });
    }, () => {});
  }
  return {
    id: options.id,
    url,
    joined: membership.joined,
    orchestrator: membership.orchestrator,
    async stop() {
      if (stopped) return;
      stopped = true;
      kvReports?.stop();
      await membership.leave();
      await app.close();
      poster.close();
    },
  };
}
