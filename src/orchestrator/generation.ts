/**
 * One generation per request, from its request to its answer: `POST /v1/generate`'s digest
 * (generate-route.ts, digest-task.ts) or `POST /v1/completions`' real tokens (completions-route.ts,
 * completion-run.ts). Its task says what a step computes; a stage call is one HTTP request to the
 * agent holding it, a failed call resumes from the failed stage (docs/sessions.md). Everything the
 * generation learns is its own field: its deadline's bound (checked once), its admission (asked
 * once, by its session, through the swarm's one queue: docs/admission.md), its route, its path,
 * its cache reports; a share of its calls verified on other copies (verify-span.ts), its steps
 * checkpointed under an idempotency key (idempotent-generate.ts).
 */
import { RoutingError, SessionError } from '../core/errors.js';
import type { Route } from '../core/types.js';
import type { AdmitOptions } from '../core/admission-config.js';
import type { Swarm } from '../runtime/swarm.js';
import type { Clock, LeasedRoute, SwarmRequest } from '../runtime/types.js';
import { openSession, swarmSessionHost } from '../sessions/session-swarm.js';
import type { SessionHost, SessionOptions, SessionStage, StageRunner } from '../sessions/session-types.js';
import { ServeError } from '../wire/serve-error.js';
import { countCachedTokens, type CacheReport } from './cache-report.js';
import { digestTask } from './digest-task.js';
import { asServeError } from './error-answers.js';
import type { GenerateReply, GenerateRequest } from './generate-protocol.js';
import type { GenerateProgress, GenerationTask, HopReply } from './generation-task.js';
import type { StageCalls, StageTiming } from './stage-client.js';
import { verifiedRunner, type SpanChecks } from './verify-span.js';
import { checkFitsDeadline, DEFAULT_WORK, nodeScore, type GenerationBound, type WorkModel } from './work-bounds.js';

/** What every {@link Generation} is given besides its work: one request's settings. */
export interface GenerationSettings {
  /** The seated swarm's local Swarm. */
  readonly swarm: Swarm;
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

/** Options of a `POST /v1/generate` {@link Generation}: its request's digest work (digest-task.ts). */
export interface GenerationOptions extends GenerationSettings {
  readonly request: GenerateRequest;
}

/** Options of a {@link Generation} of any work: its task. */
export interface TaskGenerationOptions<T, R> extends GenerationSettings {
  readonly task: GenerationTask<T, R>;
}

/** Which agent ran which layers of the last step. */
export type GenerationPath = GenerateReply['path'];

/** Where a generation stands with admission. */
export type AdmissionState = 'waiting' | 'admitted' | 'refused';

/**
 * One request's generation. Built, it has checked its deadline (422 when it cannot fit, before it
 * waits for anything); {@link run} runs it once. Its step inputs are of type `T` (a digest, a
 * tensor), its answer of type `R`.
 */
export class Generation<T = number, R = GenerateReply> {
  /** What it computes. */
  readonly task: GenerationTask<T, R>;
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
  private readonly o: GenerationSettings;
  private readonly work: WorkModel;
  /** The last step's answers by first layer. */
  private readonly hops = new Map<number, HopReply>();
  private ran = false;

  /**
   * Checks the request's deadline, once, when its task is timed by the work model: refused (422)
   * what cannot finish in time, never sent to be timed out (docs/serve.md, "Limits").
   * @throws {ServeError} `InvalidRequest` 422 naming `prompt` or `steps`
   */
  constructor(options: GenerationOptions | TaskGenerationOptions<T, R>) {
    this.o = options;
    // A digest request's task is the digest's: T and R are then its number and GenerateReply.
    this.task = 'task' in options ? options.task : (digestTask(options.request) as unknown as GenerationTask<T, R>);
    this.work = options.work ?? DEFAULT_WORK;
    this.startedAt = options.clock.now();
    this.promptTokens = this.task.promptTokens;
    this.deadlineMs = options.session?.deadlineMs ?? Number.POSITIVE_INFINITY;
    const { model, steps, modelled } = this.task;
    this.bound = modelled ? checkFitsDeadline(options.swarm.state(), this.work, { modelId: model, promptTokens: this.promptTokens, steps }, this.deadlineMs) : undefined;
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
  async run(progress?: GenerateProgress): Promise<R> {
    const { task } = this;
    if (this.ran) throw new SessionError('InvalidInput', `a Generation runs once (model "${task.model}"); build another`);
    this.ran = true;
    const { calls, clock } = this.o;
    const runStarted = clock.now();
    const values = progress?.inputs ?? [task.first];
    this.resumedFrom = values.length - 1;
    const from = this.resumedFrom;
    let session;
    try {
      const prompt = task.prompt ?? task.promptIds;
      const request = { model: task.model, tokens: this.promptTokens + task.steps, ...(prompt !== undefined ? { prompt } : {}) };
      session = openSession<T>(this.host(), request, this.runner(), this.sessionOptions(progress?.signal));
    } catch (error) {
      throw asServeError(error); // e.g. an unknown model 400, no route 503
    }
    task.opened?.(session);
    try {
      if (from > 0) {
        session.restore(values.slice(0, from).map((v, i) => task.input(i, v))); // the new stages replay them
        task.restore(values.slice(1));
      }
      let x = task.input(from, values[from] ?? task.first);
      let steps = from;
      while (steps < task.steps) {
        const output = await session.step(x);
        calls.metrics.steps.inc();
        const next = task.next(steps, output);
        steps++;
        await progress?.afterStep(steps, next.value);
        if (next.done) break;
        x = task.input(steps, next.value);
      }
      this.route = session.route;
      this.cache = { router: session.route.cachedTokens, agent: this.cache.agent };
      countCachedTokens(calls.metrics, this.promptTokens, this.cache);
      return task.reply({
        sessionId: `${this.o.sessionNamespace ?? ''}${session.id}`,
        steps,
        resumedFrom: from,
        path: this.path,
        ms: clock.now() - runStarted - (this.waitedMs ?? 0), // its run, not its wait for a slot (as before the Generation)
        stats: session.stats(),
      });
    } catch (error) {
      // Refused before it ran: the queue's answer (429, 504 NoRoute) or the admitted lease's, not the session's.
      throw asServeError(this.refusal ?? error);
    } finally {
      calls.metrics.resumes.inc(session.stats().resumes);
      task.closed?.(session);
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
      ...this.task.session,
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
      base.release(leased.lease, { neutral: true }); // no node was called
    } catch {
      // expired, or its swarm stopped: nothing left to release
    }
    this.refusal = unfit;
    throw unfit;
  }

  /** Why an admitted lease cannot be used: a degraded route not allowed, or too little time left. */
  private unfit(leased: LeasedRoute): Error | undefined {
    if (leased.degraded && this.o.session?.allowDegraded !== true) return new SessionError('Unrecoverable', `model "${this.task.model}" has only a degraded route (layers missing); pass allowDegraded: true to run on it`);
    const left = this.deadlineMs - (this.o.clock.now() - this.startedAt);
    const bound = this.bound;
    if (bound === undefined) return undefined;
    // A resumed key's steps done are replayed, not recomputed: its prompt's step and the steps left.
    const needMs = bound.ms - bound.stepMs * Math.min(this.resumedFrom, this.task.steps - 1);
    if (needMs <= left) return undefined;
    return new RoutingError('DeadlineExceeded', `the generation waited ${Math.round(this.waitedMs ?? 0)} ms for a slot and no longer fits the rest of its deadline: it needs at least ${Math.ceil(needMs)} ms on the fastest copy of "${this.task.model}", ${Math.max(0, Math.round(left))} ms are left`);
  }

  /** The stage runner of its session, verified as its checks say; a check call's session (`<id>~v<n>`) is one call long. */
  private runner(): StageRunner<T> {
    const { calls, swarm, clock, checks } = this.o;
    const timing: StageTiming = { baseMs: this.o.session?.stageTimeoutMs ?? 30_000, work: this.work, clock, score: (nodeId) => nodeScore(swarm.state(), nodeId) };
    const common = { calls, timing, sessionNamespace: this.o.sessionNamespace ?? '' };
    const main = this.task.runner({ ...common, answered: (stage, step, reply) => this.answered(stage, step, reply) });
    const check = (): StageRunner<T> => {
      const run = this.task.runner(common);
      return (stage, input, context) => Promise.resolve(run(stage, input, context)).finally(() => this.o.session?.dropSession?.(stage.nodeId, stage.sessionId));
    };
    const historyBytes = this.task.session?.historyBytes;
    return verifiedRunner({ swarm, runner: main, check, checks, same: (a, b) => this.task.same(a, b), ...(historyBytes !== undefined ? { historyBytes } : {}) });
  }

  /** A stage call of its session answered: the last step's path, and the agent's cache report of the first step. */
  private answered(stage: SessionStage, step: number, reply: HopReply): void {
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

/**
 * Why a generation was refused before it ran, for `hecate_admission_rejections_total`; undefined
 * when it was not: a drain, a class's limit, the queue's refusal, or a client gone while waiting.
 */
export function rejectionOf(answered: unknown, hungUp: boolean, generation: Pick<Generation<unknown, unknown>, 'admission' | 'refusal'> | undefined): string | undefined {
  if (answered instanceof ServeError && (answered.code === 'Draining' || (answered.code === 'RateLimited' && !(answered.cause instanceof RoutingError)))) return answered.code;
  if (generation === undefined || generation.admission === 'admitted') return undefined;
  if (hungUp) return 'Cancelled';
  const refusal = generation.refusal;
  if (refusal instanceof RoutingError && (refusal.code === 'Saturated' || refusal.code === 'DeadlineExceeded')) return refusal.code;
  return undefined;
}
