/**
 * Sessions (docs/sessions.md): a generation run step by step through the stages of a reserved
 * route, that resumes from the failed stage when a node fails — the stages already run are not
 * rerun, the replacement stages get the session's stored inputs to rebuild their state — instead
 * of restarting. The only asynchronous part of the runtime: everything it asks of the swarm
 * (route, reserve, release, state) is synchronous.
 */
import { checkRequest } from '../core/arguments.js';
import { RoutingError, SessionError, SwarmError, type StageAttempt } from '../core/errors.js';
import { failoverInSwarm } from '../core/failover.js';
import { resumeRoute } from '../core/resume.js';
import { boundedLatency } from '../core/telemetry-limits.js';
import type { Route, Stage } from '../core/types.js';
import { backoffWait, type BackoffEnd } from './backoff-wait.js';
import { boundaryInputs, SessionHistory, stripLease } from './session-history.js';
import { admittedStart, waitForAdmission } from './session-admission.js';
import { checkStepOptions, resolveSessionOptions, sessionHostIssue, type ResolvedSessionOptions } from './session-options.js';
import type { SessionHost, SessionOptions, SessionStats, StageRunner, StepOptions, TimerClock } from './session-types.js';
import { attemptOf, callStage, describeFailures, type CallResult } from './stage-call.js';
import { aroundBusy, busyAnswer, type BusyAnswer } from './node-busy.js';
import { StateHolders } from './state-holders.js';
import type { Lease, LeasedRoute, ReleaseOutcome, SwarmRequest } from '../runtime/types.js';

const stageKey = (s: Stage) => `${s.nodeId}\u0000${s.layerStart}\u0000${s.layerEnd}`;

/**
 * One generation on the swarm. Open it with `swarm.session(request, runStage)` (`hecate-swarm/sessions`); call
 * {@link Session.step} once per forward pass (one at a time), then {@link Session.close}.
 */
export class Session<T> {
  /** The session's id, passed to every stage call. */
  readonly id: string;
  private readonly host: SessionHost;
  private readonly request: SwarmRequest;
  private readonly runStage: StageRunner<T>;
  private readonly clock: TimerClock;
  private readonly o: ResolvedSessionOptions;
  private readonly signal: AbortSignal | undefined;
  private readonly deadlineAt: number;
  private current: Route;
  private lease: Lease | undefined;
  private leaseTtl: number;
  /** Stages whose node holds this session's state for exactly those layers. */
  private readonly warm = new Set<string>();
  /** Nodes that failed a call of this session: dead to it whatever the swarm says. */
  private readonly failed = new Set<string>();
  private readonly history: SessionHistory<T>;
  private readonly holders: StateHolders; // the nodes a call went to, told to drop its state at the end (dropSession)
  private status: 'open' | 'closed' | 'failed' = 'open';
  private running = false; // true while a step runs
  private readonly lostOn = new Set<string>(); // nodes that lost this session's state once: again is a failure
  /** Gives up the running call or backoff at once (set while one waits); `close` uses it. */
  private interrupt: (() => void) | undefined;
  /** Why the session was interrupted (closed during a step). */
  private interrupted: unknown;
  /** Clean steps (no failure) on the current lease, and their summed duration: what `close` reports. */
  private leaseSteps = 0;
  private leaseMs = 0;
  private counters = { resumes: 0, calls: 0, replayedInputs: 0, replayedLayerSteps: 0, freshLayerSteps: 0 };

  /** @internal use `swarm.session` or `openSession` (`hecate-swarm/sessions`) */
  constructor(host: SessionHost, request: SwarmRequest, runStage: StageRunner<T>, options: SessionOptions) {
    const hostIssue = sessionHostIssue(host);
    if (hostIssue !== undefined) throw new SessionError('InvalidInput', hostIssue);
    this.o = resolveSessionOptions(runStage, options); // throws SessionError InvalidInput
    checkRequest(request); // RoutingError InvalidRequest, as the swarm's route gives, whatever the host
    this.host = host;
    this.request = request;
    this.runStage = runStage;
    this.clock = options.clock ?? host.clock;
    this.signal = options.signal;
    this.history = new SessionHistory<T>(this.o.maxHistory, options.historyBytes);
    this.holders = new StateHolders(() => this.id, options.dropSession);
    const now = this.clock.now();
    this.deadlineAt = options.deadlineMs === undefined ? Infinity : now + options.deadlineMs;
    if (this.o.priority !== undefined) {
      const start = admittedStart(host, request); // no lease yet: its first step waits for admission
      [this.id, this.current, this.leaseTtl] = [`session-${start.id}`, start.route, 0];
      return;
    }
    const leased = host.route(request, { reserve: true });
    if (leased.degraded && !this.o.allowDegraded) {
      this.releaseQuietly(leased.lease, { neutral: true });
      throw new SessionError('Unrecoverable', `model "${request.model ?? leased.modelId}" has only a degraded route (layers missing); pass allowDegraded: true to run on it`);
    }
    this.id = `session-${leased.lease.id}`; // lease ids are unique and deterministic per swarm
    this.current = stripLease(leased);
    this.lease = leased.lease;
    this.leaseTtl = leased.lease.expiresAt - now;
  }

  /** The route the next step will take (plain data). */
  get route(): Route {
    return this.current;
  }

  /** Counters so far. */
  stats(): SessionStats {
    return { sessionId: this.id, steps: this.history.steps, ...this.counters, state: this.status };
  }

  /**
   * Runs one forward pass: every stage of the route in order, each given the previous one's
   * output; resolves with the last stage's output. A failed stage is re-routed and the pass
   * continues from it (docs/sessions.md); past the retry budget, the deadline, an abort or when no
   * live node holds the remaining layers, it rejects with a {@link SessionError} and the session
   * is failed, holding no lease.
   */
  async step(input: T, options: StepOptions = {}): Promise<T> {
    checkStepOptions(options); // SessionError InvalidInput, before anything changes
    if (this.status !== 'open') throw new SessionError('Closed', `session "${this.id}" is ${this.status}; open a new one`);
    if (this.running) throw new SessionError('StepInProgress', `session "${this.id}" is already running a step; await it before the next`);
    this.running = true;
    const stepIndex = this.history.steps;
    const started = this.clock.now();
    const attempts: StageAttempt[] = [];
    const inputs = new Map<number, T>();
    const backfill = new Map<number, readonly T[]>();
    const signals = [this.signal, options.signal].filter((s): s is AbortSignal => s !== undefined);
    let resumes = 0;
    try {
      this.host.assertRunning?.();
      if (this.lease === undefined && this.o.priority !== undefined) this.take(await this.admitted(undefined, stepIndex, attempts, signals));
      this.renewIfDue();
      let x = input;
      let chained: readonly T[] | undefined; // the previous call's replay outputs, this step
      let s = 0;
      while (s < this.current.stages.length) {
        const stage = this.current.stages[s] as Stage;
        const fresh = !this.warm.has(stageKey(stage));
        let replay: T[] = [];
        if (fresh) {
          const got = this.replayFor(stage, chained, attempts);
          replay = got;
          if (chained !== undefined && got === chained) backfill.set(stage.layerStart, got);
        }
        inputs.set(stage.layerStart, x);
        const result = await this.call(stage, s, x, replay, fresh, stepIndex, signals);
        attempts.push(attemptOf(stepIndex, s, stage, result, replay.length));
        if (result.ok) {
          this.warm.add(stageKey(stage));
          x = result.output;
          chained = replay.length > 0 ? result.replayOutputs : undefined;
          s++;
          continue;
        }
        chained = undefined;
        if (result.outcome === 'aborted') {
          const closed = this.interrupted !== undefined;
          throw this.fail(closed ? 'Closed' : 'Aborted', `session "${this.id}" step ${stepIndex} was ${closed ? 'closed' : 'aborted'} at stage ${s} (node "${stage.nodeId}")`, attempts, result.error, true);
        }
        // A disagreement nobody settled (verifySpans) is no node's proven failure: charged to none, not retried.
        if (result.error instanceof SessionError && result.error.code === 'Disputed') throw this.fail('Disputed', `session "${this.id}" step ${stepIndex}: ${result.error.message}`, attempts, result.error, true);
        // The deadline is the request's budget, not a node's failure: charged to none (docs/sessions.md).
        if (result.outcome === 'deadline') throw this.fail('DeadlineExceeded', `session "${this.id}" passed its deadline at step ${stepIndex}, stage ${s} (node "${stage.nodeId}")`, attempts, undefined, true);
        // Busy or lost (docs/sessions.md): charged nothing; stepped around once, or stayed on (lost: called fresh).
        const busy = busyAnswer(stage.nodeId, result, fresh, this.lostOn);
        if (busy === 'stay') this.warm.delete(stageKey(stage)); // it ran the step, or lost it: called fresh
        if (busy !== undefined) this.endLease(busy === 'around' ? { busyNode: stage.nodeId } : { neutral: true });
        else {
          this.failed.add(stage.nodeId);
          for (const key of [...this.warm]) if (key.startsWith(`${stage.nodeId}\u0000`)) this.warm.delete(key);
          this.host.stageFailed?.(stage.nodeId, result.outcome);
          // The failed node is known: only it counts the failure towards ejection (docs/detection.md).
          this.endLease({ ok: false, latencyMs: boundedLatency(this.clock.now() - started), failedNode: stage.nodeId });
        }
        resumes++;
        if (resumes > this.o.retries) {
          throw this.fail('RetryBudgetExhausted', `session "${this.id}" step ${stepIndex} failed ${resumes} times (retry budget ${this.o.retries}): ${describeFailures(attempts)}`, attempts, result.error);
        }
        // Backoff spares a node that may be briefly overloaded; one the swarm knows is down is routed around at once, one that lost the state called again.
        const waited = result.outcome === 'node-down' || result.outcome === 'lost' || this.isDown(stage.nodeId) ? 'ok' : await this.backoff(resumes, signals);
        if (waited !== 'ok') {
          const closed = this.interrupted !== undefined;
          throw waited === 'aborted'
            ? this.fail(closed ? 'Closed' : 'Aborted', `session "${this.id}" step ${stepIndex} was ${closed ? 'closed' : 'aborted'} while waiting to resume`, attempts, undefined, true)
            : this.fail('DeadlineExceeded', `session "${this.id}" passed its deadline while waiting to resume step ${stepIndex}`, attempts, undefined, true);
        }
        s = await this.reroute(s, stepIndex, attempts, signals, busy);
        if (s === 0) {
          x = input;
          inputs.clear();
          backfill.clear();
        }
        this.counters.resumes++;
      }
      const took = this.clock.now() - started;
      if (resumes === 0) {
        this.leaseSteps++;
        this.leaseMs += took;
      }
      this.history.commit(boundaryInputs(this.current, inputs), backfill);
      return x;
    } catch (error) {
      if (!(error instanceof SessionError) && this.status === 'open') {
        // Something outside the stages broke (the swarm was stopped, say): never leave a lease open.
        this.status = 'failed';
        this.endLease({ ok: false });
        this.holders.drop();
      }
      throw error;
    } finally {
      this.running = false;
    }
  }

  /**
   * Continues a generation run elsewhere (docs/sessions.md, "Continuing elsewhere"): `inputs` are
   * its step inputs at the route's first layer, oldest first. Before the first step only; the next
   * step is step `inputs.length`, and every stage's first call replays them.
   */
  restore(inputs: readonly T[]): void {
    if (this.status !== 'open' || this.running || this.history.steps > 0) throw new SessionError('InvalidInput', `session "${this.id}" can be restored only when open, before its first step`);
    this.history.restore(this.current.stages[0]?.layerStart ?? 0, inputs);
  }

  /**
   * Ends the session: releases its lease with the mean latency of its clean steps (a step's pass
   * time, comparable to a one-shot request's; the time between steps is the caller's). A running
   * step is aborted. Closing twice, or after a failure, does nothing. Every node a call went to is
   * then told to drop the session's state (`dropSession`), as after a failure.
   */
  close(): SessionStats {
    if (this.status === 'open') {
      this.status = 'closed';
      if (this.running) {
        this.interrupted = new SessionError('Closed', `session "${this.id}" was closed during a step`);
        this.interrupt?.();
      }
      this.endLease(this.leaseSteps > 0 ? { latencyMs: boundedLatency(this.leaseMs / this.leaseSteps) } : {});
      this.holders.drop();
    }
    return this.stats();
  }

  /** The replay of a fresh stage: the stored inputs at its first layer, else what the previous replacement handed back. */
  private replayFor(stage: Stage, chained: readonly T[] | undefined, attempts: readonly StageAttempt[]): T[] {
    if (this.history.steps === 0) return [];
    if (this.history.dropped > 0 && this.o.historyOverflow === 'fail') {
      throw this.fail('HistoryTruncated', `session "${this.id}" cannot rebuild node "${stage.nodeId}" for layers [${stage.layerStart}, ${stage.layerEnd}): the oldest ${this.history.dropped} of ${this.history.steps} steps were dropped past maxHistory ${this.o.maxHistory} (use historyOverflow: 'slide' for a sliding-window model)`, attempts);
    }
    const stored = this.history.at(stage.layerStart);
    if (stored !== undefined) return stored;
    if (chained !== undefined && chained.length === this.history.steps - this.history.dropped) return chained as T[];
    throw this.fail('ReplayOutputsMissing', `session "${this.id}" has no history at layer ${stage.layerStart} for node "${stage.nodeId}": the replacement stage before it did not hand back its replay outputs (call context.replayed(outputs))`, attempts);
  }

  /** Bytes of history held at the route's later boundaries (counted with the `historyBytes` option; 0 without). */
  historyBytes(): number {
    return this.history.heldBytes;
  }

  /**
   * Routes the remaining layers after stage `s` failed; returns the stage index to continue from.
   * After a `busy` answer: around that node when another copy can take its layers, else where it stood.
   */
  private async reroute(s: number, stepIndex: number, attempts: readonly StageAttempt[], signals: readonly AbortSignal[], busy?: BusyAnswer): Promise<number> {
    const state = this.host.state();
    const failedNode = (this.current.stages[s] as Stage).nodeId;
    let route: Route;
    let from: number;
    try {
      if (busy === 'stay') [route, from] = [this.current, s];
      else if (this.o.onFailure === 'restart') {
        for (const n of this.failed) if (n !== failedNode && state.nodes[n]?.alive === true) {
          // failover knows one failed node; the others must not be served either
          throw new RoutingError('Unrecoverable', `node "${n}" failed this session but the swarm still counts it alive`);
        }
        const failover = () => failoverInSwarm(this.current, failedNode, state, { allowDegraded: this.o.allowDegraded, request: this.request }).route;
        route = busy === 'around' ? (aroundBusy(failover) ?? this.current) : failover();
        from = 0;
        this.warm.clear();
      } else {
        const resume = (dead: string[]) => resumeRoute(this.current, s, state, { allowDegraded: this.o.allowDegraded, request: this.request, prefer: this.o.prefer, dead });
        const resumption = busy === 'around' ? (aroundBusy(() => resume([...this.failed, failedNode])) ?? { route: this.current, resumeAt: s }) : resume([...this.failed]);
        route = resumption.route;
        from = resumption.resumeAt;
      }
    } catch (error) {
      if (error instanceof RoutingError) throw this.fail('Unrecoverable', `session "${this.id}" cannot continue step ${stepIndex}: ${error.message}`, attempts, error);
      throw error;
    }
    // Its boundary's history dropped past the bytes bound: every stage recomputed from the first layer's (docs/sessions.md, "Bounded history").
    if (from > 0 && this.history.steps > 0 && this.history.at(route.stages[from]?.layerStart ?? 0) === undefined) {
      from = 0;
      this.warm.clear();
    }
    // A stage off the new route misses its steps from now on: its state goes stale.
    const onRoute = new Set(route.stages.map(stageKey));
    for (const key of [...this.warm]) if (!onRoute.has(key)) this.warm.delete(key);
    this.take(this.o.priority === undefined ? this.host.reserve(route, this.request) : await this.admitted(route, stepIndex, attempts, signals)); // the new copy learns the replayed history
    this.leaseSteps = 0;
    this.leaseMs = 0;
    return from;
  }

  /** One call of one stage (see {@link callStage}); counts the work of a call that answered. */
  private async call(stage: Stage, s: number, input: T, replay: readonly T[], fresh: boolean, step: number, signals: readonly AbortSignal[]): Promise<CallResult<T>> {
    this.counters.calls++;
    this.holders.add(stage.nodeId);
    const watch = this.host.watch;
    const result = await callStage({
      runStage: this.runStage,
      stage: { nodeId: stage.nodeId, modelId: this.current.modelId, layerStart: stage.layerStart, layerEnd: stage.layerEnd, stageIndex: s, sessionId: this.id },
      input,
      replay,
      fresh,
      step,
      clock: this.clock,
      timeoutMs: this.o.stageTimeoutMs + replay.length * this.o.replayTimeoutMsPerInput,
      deadlineAt: this.deadlineAt,
      aliveCheckMs: this.o.aliveCheckMs,
      signals,
      isDown: () => this.isDown(stage.nodeId),
      ...(watch !== undefined ? { watch: (onDown: () => void) => watch.call(this.host, stage.nodeId, onDown) } : {}),
      interruptible: (interrupt) => {
        this.interrupt = interrupt;
      },
      interrupted: () => this.interrupted,
    });
    if (result.ok) {
      const layers = stage.layerEnd - stage.layerStart;
      this.counters.freshLayerSteps += layers;
      this.counters.replayedInputs += replay.length;
      this.counters.replayedLayerSteps += replay.length * layers;
    }
    return result;
  }

  /** Waits before a resume: `backoffMs · 2^(n−1)`, capped; cut short by an abort or the deadline. */
  private backoff(n: number, signals: readonly AbortSignal[]): Promise<BackoffEnd> {
    const wait = Math.min(this.o.backoffMs * 2 ** (n - 1), this.o.maxBackoffMs);
    if (signals.some((x) => x.aborted) || this.interrupted !== undefined) return Promise.resolve('aborted');
    const left = this.deadlineAt - this.clock.now();
    if (left <= 0) return Promise.resolve('deadline');
    if (wait === 0) return Promise.resolve('ok');
    return backoffWait(this.clock, wait, left, signals, (i) => (this.interrupt = i));
  }

  private isDown(nodeId: string): boolean {
    return this.host.state().nodes[nodeId]?.alive !== true;
  }

  /** A long session would outlive its lease: renew it (reserve again, release the old one neutrally) at half its life. */
  private renewIfDue(): void {
    const lease = this.lease;
    if (lease === undefined) {
      this.take(this.host.reserve(this.current));
      return;
    }
    if (this.clock.now() < lease.expiresAt - this.leaseTtl / 2) return;
    const renewed = this.host.reserve(this.current);
    this.releaseQuietly(lease, {});
    this.take(renewed);
  }

  /** An admitted session's lease, once it has room (docs/admission.md); the session fails at its deadline, abort or close. */
  private async admitted(route: Route | undefined, stepIndex: number, attempts: readonly StageAttempt[], signals: readonly AbortSignal[]): Promise<LeasedRoute> {
    const got = await waitForAdmission({ host: this.host, request: this.request, priority: this.o.priority as number, deadlineAt: this.deadlineAt, clock: this.clock, signals, onInterrupt: (i) => (this.interrupt = i) }, route, route !== undefined);
    if (!('code' in got)) {
      // Admitted onto a degraded route: refused as an unadmitted session's first route is.
      if (got.degraded && !this.o.allowDegraded) {
        this.releaseQuietly(got.lease, { neutral: true });
        throw this.fail('Unrecoverable', `session "${this.id}" step ${stepIndex}: model "${this.request.model ?? got.modelId}" has only a degraded route (layers missing); pass allowDegraded: true to run on it`, attempts, undefined, true);
      }
      return got;
    }
    const why = this.interrupted !== undefined ? 'Closed' : got.code;
    throw this.fail(why, `session "${this.id}" step ${stepIndex} ${why === 'Closed' ? 'was closed' : why === 'Aborted' ? 'was aborted' : 'passed its deadline'} while waiting for admission`, attempts, got.error, true);
  }

  private take(leased: LeasedRoute): void {
    this.current = stripLease(leased);
    this.lease = leased.lease;
    this.leaseTtl = leased.lease.expiresAt - this.clock.now();
  }

  private endLease(outcome: ReleaseOutcome): void {
    const lease = this.lease;
    this.lease = undefined;
    if (lease !== undefined) this.releaseQuietly(lease, outcome);
  }

  /** A lease that expired on its own, or whose swarm was stopped, is already gone: nothing left to release. */
  private releaseQuietly(lease: Lease, outcome: ReleaseOutcome): void {
    try {
      this.host.release(lease, outcome);
    } catch (error) {
      if (!(error instanceof SwarmError && (error.code === 'UnknownLease' || error.code === 'Stopped'))) throw error;
    }
  }

  /** Fails the session: no lease left open, the error to throw. */
  private fail(code: SessionError['code'], message: string, attempts: readonly StageAttempt[], cause?: unknown, neutral = false): SessionError {
    if (this.status === 'open') this.status = 'failed';
    this.endLease(neutral ? { neutral: true } : { ok: false });
    this.holders.drop();
    return new SessionError(code, message, [...attempts], cause === undefined ? undefined : { cause });
  }
}
