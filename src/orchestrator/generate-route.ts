/**
 * `POST /v1/generate` on the orchestrator: one session on the seated swarm's local Swarm (a
 * replica's own, its session ids prefixed with the replica's name), counted in the metrics.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { RoutingError } from '../core/errors.js';
import type { SessionOptions } from '../sessions/session-types.js';
import { generate } from './generate.js';
import { generateBodySchema, type GenerateRequest } from './generate-protocol.js';
import type { OrchestratorParts } from './orchestrator-parts.js';
import type { PeerPost } from '../net/peer-post.js';
import { AgentDrops } from './agent-drops.js';
import { admittedHost } from './admitted-host.js';
import { asServeError } from './error-answers.js';
import { promptTokens } from '../core/prompt.js';
import { cancelOnHangUp } from './client-cancel.js';
import { classOf, type ClientClass, type ClientClasses } from './client-classes.js';
import { DrainGate } from './drain-gate.js';
import { ServeError } from '../wire/serve-error.js';
import { checkFitsDeadline, DEFAULT_WORK, type WorkModel } from './work-bounds.js';
import { idempotencyKeyOf } from './idempotency-key.js';
import { generateIdempotent, type GenerateProgress, type IdempotencySettings } from './idempotent-generate.js';
import type { SpanChecks } from './verify-span.js';

/** An unsigned POST over fetch, for the drops when no poster is given. */
const unsigned: PeerPost = (url, body, signal) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal, redirect: 'error' });

/** What the generate route hands the orchestrator: the drops it sends, the gate a drain closes. */
export interface GenerateRoute {
  readonly drops: AgentDrops;
  readonly gate: DrainGate;
}

/**
 * Registers `POST /v1/generate`; stage calls go out through `post` (signed, trusting the CA:
 * peer-post.ts). The caller's class (`classes`, client-classes.ts) gives its priority, deadline
 * and limit; a client that hangs up cancels its generation, and the agents its session called are
 * told to drop it when it ends (docs/serve.md, "Cancellation"); a drain closes its gate
 * ("Draining"). A request with an idempotency key is kept in `idempotency`'s store ("Idempotent
 * generation"); `checks`, when given, verifies a share of the stage calls on other copies
 * (verify-span.ts).
 */
export function registerGenerateRoute(app: FastifyInstance, parts: OrchestratorParts, sessionOptions: SessionOptions, work: WorkModel = DEFAULT_WORK, post?: PeerPost, classes?: ClientClasses, idempotency?: IdempotencySettings, checks?: SpanChecks): GenerateRoute {
  const { clock, registry, seat, metrics, models, classLimits } = parts;
  const drops = new AgentDrops(registry, post ?? unsigned, clock, metrics);
  // This process's session ids are its own: lease ids count from 1 again after a restart, and an
  // agent refuses, for a while, a session id it was told to drop.
  const boot = randomBytes(4).toString('hex');
  const gate = new DrainGate();
  app.post<{ Body: GenerateRequest }>('/v1/generate', { schema: { body: generateBodySchema } }, async (request, reply) => {
    const started = clock.now();
    const hungUp = cancelOnHangUp(reply);
    let passed: AbortController | undefined;
    let member: ClientClass | undefined;
    let admitted = false;
    try {
      passed = gate.enter(); // 503 Draining once a drain began
      const signal = AbortSignal.any([hungUp, passed.signal]);
      const swarm = seat.local();
      if (swarm === undefined) throw new ServeError('NoSwarm', 503, `no swarm yet: the agents that joined (${[...registry.all()].map((r) => r.id).join(', ') || 'none'}) cannot hold every copy of ${models.map((m) => `"${m.id}"`).join(', ')}`);
      const cls = classes === undefined ? undefined : classOf(classes, request.headers);
      if (cls !== undefined) {
        classLimits.enter(cls, 1000); // 429 RateLimited past the class's maxInFlight
        member = cls;
      }
      const replica = seat.replica;
      const prefix = replica === undefined ? `${boot}/` : `${replica.view().replica}/${boot}/`;
      const deadlineMs = Math.min(cls?.deadlineMs ?? Number.POSITIVE_INFINITY, sessionOptions.deadlineMs ?? Number.POSITIVE_INFINITY);
      const body = request.body;
      const tokens = Math.max(1, promptTokens(body.prompt));
      // Refused before it waits what could not finish in time anyway (422, "Limits").
      checkFitsDeadline(swarm.state(), work, body.model, tokens, body.steps, deadlineMs);
      const run = async (progress?: GenerateProgress) => {
        // Admission (docs/admission.md): a lease once a copy has room, by the class's priority, within the deadline.
        const waitStarted = clock.now();
        const leased = await swarm.admit({ model: body.model, tokens: tokens + body.steps, prompt: body.prompt }, { priority: cls?.priority ?? 0, ...(Number.isFinite(deadlineMs) ? { deadlineMs } : {}), signal: progress?.signal ?? signal });
        admitted = true;
        const waited = clock.now() - waitStarted;
        metrics.admission.waitSeconds.observe({ class: cls?.name ?? 'default' }, waited / 1000);
        const left = deadlineMs - waited;
        const stepsLeft = body.steps - (progress === undefined ? 0 : progress.inputs.length - 1);
        try {
          checkFitsDeadline(swarm.state(), work, body.model, tokens, stepsLeft, left);
        } catch (error) {
          // It fitted before the wait: the time waiting for a slot is what it lacks now (504, not 422).
          swarm.release(leased.lease, {});
          throw new RoutingError('DeadlineExceeded', `the generation waited ${Math.round(waited)} ms for a slot and no longer fits the rest of its deadline: ${(error as Error).message}`, { cause: error });
        }
        const options: SessionOptions = { ...sessionOptions, ...(Number.isFinite(left) ? { deadlineMs: Math.max(left, 1) } : {}), signal, dropSession: drops.hook(prefix) };
        const host = admittedHost(swarm, leased);
        try {
          return await generate(swarm, registry, metrics, body, options, clock, prefix, work, post, progress, checks, host.host);
        } finally {
          host.unused(); // the lease, if the session never took it (a refusal before it opened)
        }
      };
      // An idempotency key: claimed, checkpointed, resumed or answered from the store (its progress's signal follows `signal`).
      // A key is its class's: another class can neither hold it nor read its answer.
      const given = idempotencyKeyOf(request.headers['idempotency-key'], body.idempotencyKey);
      const key = given === undefined || cls === undefined ? given : `${cls.name}/${given}`;
      const answer = key === undefined || idempotency === undefined ? await run() : await generateIdempotent(key, body, idempotency, clock, signal, run);
      metrics.requests.inc({ outcome: 'ok' });
      metrics.requestSeconds.observe((clock.now() - started) / 1000);
      return answer;
    } catch (error) {
      // Handed back by a drain: the drain's 503 with Retry-After, not the session's abort.
      const answered = asServeError(passed?.signal.aborted === true && passed.signal.reason instanceof ServeError ? passed.signal.reason : error);
      metrics.requests.inc({ outcome: hungUp.aborted ? 'Cancelled' : answered instanceof ServeError ? answered.code : 'Internal' });
      const reason = rejection(error, answered, hungUp.aborted, admitted);
      if (reason !== undefined) metrics.admission.rejections.inc({ reason });
      throw answered;
    } finally {
      if (passed !== undefined) gate.leave(passed);
      if (member !== undefined) classLimits.leave(member);
    }
  });
  return { drops, gate };
}

/** Why a generation was refused before it ran, for `hecate_admission_rejections_total`; undefined when it was not. */
function rejection(error: unknown, answered: unknown, hungUp: boolean, admitted: boolean): string | undefined {
  if (answered instanceof ServeError && (answered.code === 'Draining' || (answered.code === 'RateLimited' && !(error instanceof RoutingError)))) return answered.code;
  if (admitted) return undefined;
  if (hungUp) return 'Cancelled';
  if (error instanceof RoutingError && (error.code === 'Saturated' || error.code === 'DeadlineExceeded')) return error.code;
  return undefined;
}
