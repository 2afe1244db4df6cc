/**
 * One generation of `POST /v1/generate` (the route: generate-route.ts), from its request to its
 * answer: the prompt's digest goes through every layer `steps` times (each step's output is the
 * next step's input), a stage call is one HTTP request to the agent holding it, a failed call
 * resumes from the failed stage (docs/sessions.md). Everything the generation learns is its own
 * field: its deadline's bound (checked once), its admission (asked once, by its session, through
 * the swarm's one queue: docs/admission.md), its route, its path, its cache reports.
 */
import { RoutingError, SessionError } from '../core/errors.js';
import { promptTokens } from '../core/prompt.js';
import type { Route } from '../core/types.js';
import type { AdmitOptions } from '../core/admission-config.js';
import type { Swarm } from '../runtime/swarm.js';
import type { Clock, LeasedRoute, SwarmRequest } from '../runtime/types.js';
import { openSession, swarmSessionHost } from '../sessions/session-swarm.js';
import type { SessionHost, SessionOptions, SessionStage, StageRunner } from '../sessions/session-types.js';
import { digestHex, promptDigest } from '../wire/digest.js';
import type { DigestStageReply } from './stage-call.js';
import { countCachedTokens, type CacheReport } from './cache-report.js';
import { asServeError } from './error-answers.js';
import type { GenerateReply, GenerateRequest } from './generate-protocol.js';
import type { GenerateProgress } from './idempotent-generate.js';
import { httpStageRunner, type StageCalls, type StageTiming } from './stage-client.js';
import { verifiedRunner, type SpanChecks } from './verify-span.js';
import { checkFitsDeadline, DEFAULT_WORK, nodeScore, type GenerationBound, type WorkModel } from './work-bounds.js';

/** Options of a {@link Generation}: one request's. */
export interface GenerationOptions {
  /** The seated swarm's local Swarm. */
  readonly swarm: Swarm;
  readonly request: GenerateRequest;
  readonly calls: StageCalls;
  /** The orchestrator's clock (its Swarm's): it times the reply's `ms`, the wait and the deadline. */
  readonly clock: Clock;
  /** The session's options; `deadlineMs` is the generation's whole deadline (the client class's when shorter). */
  readonly session?: SessionOptions;
  /** @defaultValue {@link DEFAULT_WORK} */
  readonly work?: WorkModel;
  /** Goes before the session's id wherever it leaves the orchestrator (the boot id, the replica's name). @defaultValue '' */
  readonly sessionNamespace?: string;
  /** Its band in the admission queue (the client class's priority). @defaultValue 0 */
  readonly priority?: number;
  /** Its client class, for the wait histogram. @defaultValue 'default' */
  readonly className?: string;
  /** Aborts the generation (the client hung up, a drain handed it back). */
  readonly signal?: AbortSignal;
  /** Verifies a share of the stage calls on other copies (verify-span.ts). */
  readonly checks?: SpanChecks;
}

/** Which agent ran which layers of the last step. */
export type GenerationPath = GenerateReply['path'];

/** Where a generation stands with admission. */
export type AdmissionState = 'waiting' | 'admitted' | 'refused';

/**
 * One request's generation. Built, it has checked its deadline (422 when it cannot fit, before it
 * waits for anything); {@link run} runs it once.
 */
export class Generation {
  readonly request: GenerateRequest;
  /** The prompt's tokens (at least 1): computed once. */
  readonly promptTokens: number;
  /** Its whole deadline in ms from {@link startedAt}; Infinity for none. */
  readonly deadlineMs: number;
  readonly startedAt: number;
  /** The least time it takes on the fastest copy, as checked against the deadline (undefined: no copy in the plan). */
  readonly bound: GenerationBound | undefined;
  /** Its admission: `admitted` once a slot leased it, `refused` when the queue said no. */
  admission: AdmissionState = 'waiting';
  /** How many times it asked admission for its first slot: 1 once it ran. */
  admissions = 0;
  /** Milliseconds it waited for its slot. */
  waitedMs: number | undefined;
  /** Why it never ran, when it did not: the queue's refusal, or once admitted a degraded route or too little time left (the library's error). */
  refusal: unknown;
  /** The route it ended on. */
  route: Route | undefined;
  /** The prompt-prefix cache: the router's estimate and the first stage's agent's report. */
  cache: CacheReport = { router: undefined, agent: undefined };
  /** Steps taken from an idempotency key's checkpoint. */
  resumedFrom = 0;
  private readonly o: GenerationOptions;
  private readonly work: WorkModel;
  /** The last step's answers by first layer. */
  private readonly hops = new Map<number, DigestStageReply>();
  private ran = false;

  /**
   * Checks the request's deadline, once: refused (422) what cannot finish in time, never sent to be
   * timed out (docs/serve.md, "Limits").
   * @throws {ServeError} `InvalidRequest` 422 naming `prompt` or `steps`
   */
  constructor(options: GenerationOptions) {
    this.o = options;
    this.request = options.request;
    this.work = options.work ?? DEFAULT_WORK;
    this.startedAt = options.clock.now();
    this.promptTokens = Math.max(1, promptTokens(options.request.prompt));
    this.deadlineMs = options.session?.deadlineMs ?? Number.POSITIVE_INFINITY;
    this.bound = checkFitsDeadline(options.swarm.state(), this.work, { modelId: this.request.model, promptTokens: this.promptTokens, steps: this.request.steps }, this.deadlineMs);
  }

  /** Which agent ran which layers of the last step, in order. */
  get path(): GenerationPath {
    return [...this.hops.values()].sort((a, b) => a.layerStart - b.layerStart).map((r) => ({ nodeId: r.nodeId, layers: [r.layerStart, r.layerEnd] as const }));
  }

  /**
   * Runs the generation: with `progress` (an idempotency key: idempotent-generate.ts) from the
   * steps whose inputs it carries, reporting each step, stopping when its signal aborts. Library
   * errors become {@link ServeError}s with the status to answer (error-answers.ts): an unknown
   * model 400 (field `model`), nothing to serve with 503, a refusal while waiting 429 or 504
   * (`NoRoute`), a failed session 502, 503 or 504.
   */
  async run(progress?: GenerateProgress): Promise<GenerateReply> {
    if (this.ran) throw new SessionError('InvalidInput', `a Generation runs once (model "${this.request.model}"); build another`);
    this.ran = true;
    const { request } = this;
    const { calls, clock } = this.o;
    const runStarted = clock.now();
    this.resumedFrom = progress === undefined ? 0 : progress.inputs.length - 1;
    const from = this.resumedFrom;
    let session;
    try {
      session = openSession<number>(this.host(), { model: request.model, tokens: this.promptTokens + request.steps, prompt: request.prompt }, this.runner(), this.sessionOptions(progress?.signal));
    } catch (error) {
      throw asServeError(error); // e.g. an unknown model 400, no route 503
    }
    try {
      if (from > 0) session.restore(progress?.inputs.slice(0, from) ?? []); // the new stages replay them
      let x = progress?.inputs[from] ?? promptDigest(request.prompt);
      for (let t = from; t < request.steps; t++) {
        x = await session.step(x);
        calls.metrics.steps.inc();
        await progress?.afterStep(t + 1, x);
      }
      this.route = session.route;
      this.cache = { router: session.route.cachedTokens, agent: this.cache.agent };
      countCachedTokens(calls.metrics, this.promptTokens, this.cache);
      return {
        model: request.model,
        steps: request.steps,
        digest: digestHex(x),
        sessionId: `${this.o.sessionNamespace ?? ''}${session.id}`,
        resumes: session.stats().resumes,
        path: this.path,
        ms: clock.now() - runStarted - (this.waitedMs ?? 0), // its run, not its wait for a slot (as before the Generation)
        ...(from > 0 ? { resumedFrom: from } : {}),
      };
    } catch (error) {
      // Refused before it ran: the queue's answer (429, 504 NoRoute) or the admitted lease's, not the session's.
      throw asServeError(this.refusal ?? error);
    } finally {
      calls.metrics.resumes.inc(session.stats().resumes);
      session.close();
    }
  }

  /** The session's options: admitted in the generation's band, under its whole deadline and signal. */
  private sessionOptions(signal: AbortSignal | undefined): SessionOptions {
    const given = this.o.session ?? {};
    const left = this.deadlineMs - (this.o.clock.now() - this.startedAt);
    const aborted = signal ?? this.o.signal;
    return {
      ...given,
      // Each call's budget is the runner's (it grows with the call's work); the session's own
      // fixed timeout is only the deadline's backstop.
      stageTimeoutMs: Number.isFinite(this.deadlineMs) ? this.deadlineMs : 600_000,
      replayTimeoutMsPerInput: 0,
      priority: this.o.priority ?? 0,
      ...(Number.isFinite(left) ? { deadlineMs: Math.max(left, 1) } : {}),
      ...(aborted !== undefined ? { signal: aborted } : {}),
    };
  }

  /**
   * The session's host: the swarm's, its first admission this generation's (a resume reserves at
   * once, docs/serve.md "Admission"), its leases released with the agent's cache report.
   */
  private host(): SessionHost {
    const base = swarmSessionHost(this.o.swarm);
    return {
      ...base,
      // The session's route before its admission is a placeholder the lease replaces: chosen
      // without its prompt, so the prefix-cache index records the prompt only under the lease
      // admission grants (docs/prefix-cache.md, "Admission"), not on a copy it may never run on.
      choose: (request) => (base.choose as NonNullable<SessionHost['choose']>)(withoutPrompt(request)),
      // A resumed step holds work done: it reserves its new route at once rather than queue again.
      admit: (request, options, route) => (route === undefined ? this.admit(base, request, options) : Promise.resolve(base.reserve(route, request))),
      release: (lease, outcome) => base.release(lease, this.cache.agent === undefined ? outcome : { ...outcome, cachedTokens: this.cache.agent }),
    };
  }

  /**
   * The generation's one admission (docs/admission.md): a lease once a copy has room, by its band,
   * within its deadline. Admitted, it is refused still when its route is degraded (unless allowed)
   * or when the time it waited is what it now lacks (504, not 422: it fitted before the wait).
   */
  private async admit(base: SessionHost, request: SwarmRequest, options: AdmitOptions): Promise<LeasedRoute> {
    this.admissions++;
    const asked = this.o.clock.now();
    let leased: LeasedRoute;
    try {
      leased = await (base.admit as NonNullable<SessionHost['admit']>)(request, options);
    } catch (error) {
      this.refusal = error;
      this.admission = 'refused';
      throw error;
    }
    this.waitedMs = this.o.clock.now() - asked;
    this.admission = 'admitted';
    this.o.calls.metrics.admission.waitSeconds.observe({ class: this.o.className ?? 'default' }, this.waitedMs / 1000);
    const unfit = this.unfit(leased);
    if (unfit === undefined) return leased;
    try {
      base.release(leased.lease, {});
    } catch {
      // expired, or its swarm stopped: nothing left to release
    }
    this.refusal = unfit;
    throw unfit;
  }

  /** Why an admitted lease cannot be used: a degraded route not allowed, or too little time left. */
  private unfit(leased: LeasedRoute): Error | undefined {
    if (leased.degraded && this.o.session?.allowDegraded !== true) return new SessionError('Unrecoverable', `model "${this.request.model}" has only a degraded route (layers missing); pass allowDegraded: true to run on it`);
    const left = this.deadlineMs - (this.o.clock.now() - this.startedAt);
    const bound = this.bound;
    if (bound === undefined) return undefined;
    // A resumed key's steps done are replayed, not recomputed: its prompt's step and the steps left.
    const needMs = bound.ms - bound.stepMs * Math.min(this.resumedFrom, this.request.steps - 1);
    if (needMs <= left) return undefined;
    return new RoutingError('DeadlineExceeded', `the generation waited ${Math.round(this.waitedMs ?? 0)} ms for a slot and no longer fits the rest of its deadline: it needs at least ${Math.ceil(needMs)} ms on the fastest copy of "${this.request.model}", ${Math.max(0, Math.round(left))} ms are left`);
  }

  /** The stage runner of its session, verified as its checks say; a check call's session (`<id>~v<n>`) is one call long. */
  private runner(): StageRunner<number> {
    const { calls, swarm, clock, checks } = this.o;
    const timing: StageTiming = { baseMs: this.o.session?.stageTimeoutMs ?? 30_000, work: this.work, clock, score: (nodeId) => nodeScore(swarm.state(), nodeId) };
    const common = { calls, timing, promptTokens: this.promptTokens, sessionNamespace: this.o.sessionNamespace ?? '' };
    const main = httpStageRunner({ ...common, prompt: this.request.prompt, answered: (stage, step, reply) => this.answered(stage, step, reply) });
    const check = (): StageRunner<number> => {
      const run = httpStageRunner(common);
      return (stage, input, context) => Promise.resolve(run(stage, input, context)).finally(() => this.o.session?.dropSession?.(stage.nodeId, stage.sessionId));
    };
    return verifiedRunner(swarm, main, check, checks);
  }

  /** A stage call of its session answered: the last step's path, and the agent's cache report of the first step. */
  private answered(stage: SessionStage, step: number, reply: DigestStageReply): void {
    if (stage.stageIndex === 0) {
      this.hops.clear();
      if (step === 0 && reply.cachedTokens !== undefined) this.cache = { ...this.cache, agent: reply.cachedTokens };
    }
    this.hops.set(stage.layerStart, reply);
  }
}

/** `request` without its prompt. */
function withoutPrompt(request: SwarmRequest): SwarmRequest {
  const { prompt: _prompt, ...rest } = request;
  return rest;
}
