/**
 * The HTTP orchestrator of `hecate-node serve`: it embeds a Swarm with failure detection and runs
 * sessions over the agents that join it. Nodes join, heartbeat and leave over HTTP
 * (`agent-routes.ts`); the Swarm owns each agent's lifecycle and its events go out on
 * `GET /v1/events` (`swarm-events.ts`); `GET /v1/status` and `GET /metrics` read it from the swarm
 * (`status-routes.ts`); `POST /v1/generate` runs a session (`generate-route.ts`).
 */
import type { AdmissionConfig } from '../core/admission-config.js';
import type { EjectionOptions } from '../core/ejection.js';
import type { PhiOptions } from '../core/phi.js';
import type { ModelSpec, NodeProfile } from '../core/types.js';
import { systemClock } from '../runtime/clock.js';
import type { CommitMode, SwarmContract } from '../runtime/swarm-contract.js';
import type { Clock, SwarmConfig } from '../runtime/types.js';
import type { NatsAccess } from '../replication/nats-access.js';
import { plannedMemoryGb, registerAgentRoutes } from './agent-routes.js';
import { registerKvReportRoute } from './kv-report-route.js';
import { guardOrchestrator, type OrchestratorAuth } from './auth/orchestrator-guard.js';
import { classTokens, type ClientClasses } from './client-classes.js';
import type { DrainReport } from './drain-gate.js';
import { registerGenerateRoute } from './generate-route.js';
import { localCompletions } from './completions-route.js';
import type { TextModel } from './completion-run.js';
import { registerOpenAIRoutes } from './openai/openai-routes.js';
import type { ChatTemplate } from '../wire/chat-prompt.js';
import { asServeError } from './error-answers.js';
import { createHttpApp, listen } from '../net/http-app.js';
import { openSwarm } from './open-swarm.js';
import { agentLoads } from './agent-loads.js';
import { rebalancer } from '../rebalance/index.js';
import { createParts } from './orchestrator-parts.js';
import { detectorBounds, SERVE_DETECTOR } from './serve-detector.js';
import { createPeerPoster } from '../net/peer-post.js';
import { registerStatusRoutes } from './status-routes.js';
import { registerOperatorRoutes } from './operator-routes.js';
import { serverTls, type TlsOptions } from '../net/tls-options.js';
import { createJoinEdge, workModel, type EdgeOptions } from './join-edge.js';
import { checkIdempotencyOptions, openIdempotency, type IdempotencyOptions } from './open-idempotency.js';
import { spanChecks, type VerifyOptions } from './verify-span.js';
import { healthProbe, MemberBench } from './member-bench.js';

/** Options of {@link startOrchestrator}. */
export interface OrchestratorOptions extends EdgeOptions, IdempotencyOptions, VerifyOptions {
  /** @defaultValue '127.0.0.1' */
  readonly host?: string;
  /** @defaultValue 0 (any free port) */
  readonly port?: number;
  /** @defaultValue one base model `base` of 12 layers in 2 copies */
  readonly models?: readonly ModelSpec[];
  /**
   * Nodes declared up front (a topology file): the Swarm is planned over them at start, each down
   * until its agent joins. Without them the Swarm is planned when the joined agents can hold every
   * copy, and later agents grow it.
   */
  readonly nodes?: readonly NodeProfile[];
  /** @defaultValue {@link SERVE_DETECTOR} */
  readonly failureDetector?: PhiOptions;
  /** Passive ejection (docs/detection.md). @defaultValue the library's: 5 consecutive failed stage calls */
  readonly ejection?: EjectionOptions;
  /**
   * Longer than a stall the detector forgives (docs/serve.md): a stalled agent's calls wait for it
   * rather than time out, fail and eject it. @defaultValue 5000
   */
  readonly stageTimeoutMs?: number;
  /** Resumes per step. @defaultValue 3 */
  readonly retries?: number;
  /** A generation must finish within this. @defaultValue 60000 */
  readonly deadlineMs?: number;
  /**
   * The orchestrator's one clock: the embedded Swarm's (detector, leases, session deadlines, its
   * node actors' heartbeat times), every event's `at`, the waiting room's heartbeat times before
   * the plan, a generation's `ms`, the request histogram and the event stream's keep-alive. A `ManualClock` makes all of it move only when told.
   * @defaultValue systemClock
   */
  readonly clock?: Clock;
  /**
   * One of several orchestrators on one swarm (docs/serve.md, "Several orchestrators"): its
   * membership and lifecycle events go through the NATS JetStream log of swarm `swarm`, agents'
   * addresses through a KV bucket, heartbeats through a core NATS subject. Needs `nodes` (every
   * orchestrator plans over the same declared nodes) and the optional NATS packages.
   */
  readonly replication?: { readonly servers: readonly string[]; readonly swarm: string; readonly nats?: NatsAccess };
  /**
   * The swarm secret and the client token (docs/security.md): joins, heartbeats and leaves must be
   * signed with the secret and by the agent's key, an id stays bound to the key it first joined
   * with, stage calls are signed. Without it nothing is checked (an embedding that guards the
   * network itself); `hecate-node serve` always sets it.
   */
  readonly auth?: OrchestratorAuth;
  /** Serve over https with `cert` and `key`; trust `ca` when calling agents over https. */
  readonly tls?: TlsOptions;
  /** How `POST /v1/generate` waits when every copy is full (docs/admission.md); `--queue-size` sets `queueSize`. @defaultValue the library's */
  readonly admission?: AdmissionConfig;
  /** Client classes (`--classes`, docs/serve.md "Classes"): a caller's priority, deadline and limit by its token. */
  readonly classes?: ClientClasses;
  readonly log?: (line: string) => void;
  /** Models with a tokenizer, by id (`serve --model DIR`: served-model.ts): `POST /v1/completions` serves them. */
  readonly textModels?: ReadonlyMap<string, TextModel>;
  /** Each completion's bound in bytes on the boundary activations kept for replay (default 64 MiB). */
  readonly maxHistoryBytes?: number;
  /**
   * `serve --rebalance` (docs/rebalance.md "Replicas, serve and agents"): the automatic policy runs
   * every `everyMs`, each move's spans loaded by their agents (`POST /v1/spans/load`). @defaultValue off
   */
  readonly rebalance?: { readonly everyMs: number };
  /**
   * GB of every agent's memory the plan keeps aside for what end stages hold beside their layers:
   * the served model's embeddings, final norm and LM head (`serve --model`: served-model.ts). The
   * plan, and `/v1/status`, see an agent's memory less it, so no agent is given more weights than
   * its memory (docs/completions.md, "KV memory"). @defaultValue 0
   */
  readonly agentReserveGb?: number;
  /**
   * The chat template of the OpenAI door (docs/openai.md, "Prefix affinity"): conversations are
   * keyed for prefix affinity by its rendering, and a chat on a `textModels` model is prompted with
   * it. @defaultValue keyed by the canonical serialization; real-token chats prompted with ChatML
   */
  readonly chatTemplate?: ChatTemplate;
}

export type { OrchestratorAuth } from './auth/orchestrator-guard.js';
export { detectorBounds, SERVE_DETECTOR } from './serve-detector.js';

/** A running orchestrator. */
export interface RunningOrchestrator {
  readonly url: string;
  /** The embedded swarm, once planned: the local Swarm, or (replicated) the replica through its log. */
  swarm(): SwarmContract<CommitMode> | undefined;
  /**
   * Stops admitting generations (503 `Draining` with `Retry-After`), waits up to `graceMs` for the
   * running ones, hands back the rest, and waits for their agents to be told (docs/serve.md,
   * "Draining"). Then `close()`.
   */
  drain(graceMs: number): Promise<DrainReport>;
  close(): Promise<void>;
}

/** Starts the orchestrator and listens. */
export async function startOrchestrator(options: OrchestratorOptions = {}): Promise<RunningOrchestrator> {
  const log = options.log ?? (() => {});
  const clock = options.clock ?? systemClock;
  const models = options.models ?? [{ id: 'base', kind: 'base', layers: 12, pipelines: 2 }];
  const failureDetector = options.failureDetector ?? SERVE_DETECTOR;
  const sessionOptions = { stageTimeoutMs: options.stageTimeoutMs ?? 5000, retries: options.retries ?? 3, deadlineMs: options.deadlineMs ?? 60_000 };
  // A generation's lease outlives its deadline: an admitted slot is never freed while its work runs (docs/admission.md).
  const leaseTtlMs = Math.max(30_000, sessionOptions.deadlineMs + 5_000);
  const config: SwarmConfig = { models, failureDetector, leaseTtlMs, ...(options.ejection !== undefined ? { ejection: options.ejection } : {}), ...(options.admission !== undefined ? { admission: options.admission } : {}) };
  checkIdempotencyOptions(options);
  const poster = createPeerPoster({ ...(options.auth !== undefined ? { signer: { secret: options.auth.secret } } : {}), clock: options.auth?.clock ?? systemClock, ...(options.tls?.ca !== undefined ? { ca: options.tls.ca } : {}) });
  const every = options.rebalance?.everyMs;
  const parts = createParts(clock, models, config, log, every === undefined ? undefined : (registry) => rebalancer({ everyMs: every, load: agentLoads(registry, poster.post, models, clock) }));
  const reserveGb = options.agentReserveGb ?? 0;
  await openSwarm(parts, { ...(options.nodes !== undefined ? { nodes: options.nodes.map((n) => ({ ...n, memoryGb: plannedMemoryGb(n.memoryGb, reserveGb) })) } : {}), ...(options.replication !== undefined ? { replication: { ...options.replication, ...(options.auth !== undefined ? { secret: options.auth.secret } : {}) } } : {}) });

  const idempotency = await openIdempotency(parts, options, options.replication === undefined ? undefined : { ...options.replication, ...(options.auth !== undefined ? { secret: options.auth.secret } : {}) });
  const app = createHttpApp(serverTls(options.tls), asServeError);
  if (options.auth !== undefined) guardOrchestrator(app, options.classes === undefined ? options.auth : { ...options.auth, classTokens: classTokens(options.classes) }, log, parts.seat.replica?.trust);
  // Calls, not beats, decide who is in: a member whose stage calls go unanswered is benched (member-bench.ts).
  const bench = new MemberBench(parts, {
    probe: healthProbe((url, signal) => poster.post(url, '', signal, 'GET', 'application/json', null)),
    probeTimeoutMs: sessionOptions.stageTimeoutMs,
    ...(options.ejection?.consecutiveFailures !== undefined ? { misses: options.ejection.consecutiveFailures } : {}),
    ...(options.ejection?.banMs !== undefined ? { backoffMs: options.ejection.banMs } : {}),
    ...(options.ejection?.maxBanMs !== undefined ? { maxBackoffMs: options.ejection.maxBanMs } : {}),
  });
  parts.registry.whenForgotten((id) => bench.forget(id));
  const edge = { ...createJoinEdge(parts, options), bench };
  registerAgentRoutes(app, parts, edge, reserveGb);
  registerKvReportRoute(app, parts);
  if (options.auth !== undefined) registerOperatorRoutes(app, parts); // guarded: the operator token's bearer only
  const checks = spanChecks(parts, options);
  const generation = registerGenerateRoute(app, parts, {
    session: sessionOptions,
    post: poster.post,
    work: workModel(options),
    ...(options.classes !== undefined ? { classes: options.classes } : {}),
    idempotency,
    ...(checks !== undefined ? { checks } : {}),
    outcomes: bench,
  });
  // A model served with its tokenizer (serve --model) completes on real tokens here; the others go to upstream engines.
  const local = options.textModels === undefined ? undefined : localCompletions(parts, {
    models: options.textModels,
    session: sessionOptions,
    post: poster.post,
    idempotency,
    outcomes: bench,
    ...(options.maxHistoryBytes !== undefined ? { maxHistoryBytes: options.maxHistoryBytes } : {}),
    ...(options.classes !== undefined ? { classes: options.classes } : {}),
    ...(checks !== undefined ? { checks } : {}),
  });
  registerOpenAIRoutes(app, parts, { post: poster.post, stream: poster.stream, ...(options.classes !== undefined ? { classes: options.classes } : {}), ...(options.auth?.clientToken !== undefined ? { clientToken: options.auth.clientToken } : {}), deadlineMs: sessionOptions.deadlineMs, retries: sessionOptions.retries, gate: generation.gate, ...(local !== undefined ? { local } : {}), ...(options.chatTemplate !== undefined ? { chatTemplate: options.chatTemplate } : {}) });
  registerStatusRoutes(app, parts, failureDetector, sessionOptions);
  app.addHook('onClose', async () => {
    edge.silent.close();
    bench.close();
    parts.events.close();
    poster.close();
    await idempotency.store.close();
    const replica = parts.seat.replica;
    if (replica !== undefined) await replica.close();
    else parts.seat.local()?.stop();
  });

  const url = await listen(app, options.host ?? '127.0.0.1', options.port ?? 0);
  const bounds = detectorBounds(failureDetector);
  log(`orchestrator on ${url}; detector: suspect after ${bounds.suspectAfterMs} ms, down after ${bounds.downAfterMs} ms of silence (1 s heartbeats)`);
  return {
    url,
    swarm: () => parts.seat.swarm,
    async drain(graceMs) {
      const report = await generation.gate.drain(graceMs, clock);
      await generation.drops.settled();
      return report;
    },
    async close() {
      parts.events.close();
      await app.close();
    },
  };
}
