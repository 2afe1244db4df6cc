/**
 * `POST /v1/generate` on the orchestrator: the gate a drain closes, the caller's class, its
 * idempotency key, then one {@link Generation} on the seated swarm's local Swarm (a replica's own,
 * its session ids in the replica's namespace), counted in the metrics.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { SessionOptions } from '../sessions/session-types.js';
import { Generation, rejectionOf } from './generation.js';
import { generateBodySchema, type GenerateRequest } from './generate-protocol.js';
import type { OrchestratorParts } from './orchestrator-parts.js';
import type { PeerPost } from '../net/peer-post.js';
import type { CallOutcomes } from './member-bench.js';
import { AgentDrops } from './agent-drops.js';
import { asServeError } from './error-answers.js';
import { cancelOnHangUp } from './client-cancel.js';
import { classOf, type ClientClass, type ClientClasses } from './client-classes.js';
import { DrainGate } from './drain-gate.js';
import { ServeError } from '../wire/serve-error.js';
import { DEFAULT_WORK, type WorkModel } from './work-bounds.js';
import { idempotencyKeyOf } from './idempotency-key.js';
import { scopedKey } from './idempotency-scope.js';
import { generateIdempotent, type IdempotencySettings } from './idempotent-generate.js';
import type { SpanChecks } from './verify-span.js';

/** What the generate route hands the orchestrator: the drops it sends, the gate a drain closes. */
export interface GenerateRoute {
  readonly drops: AgentDrops;
  readonly gate: DrainGate;
}

/** Options of {@link registerGenerateRoute}. */
export interface GenerateRouteOptions {
  /** Every generation's session options (`stageTimeoutMs`, `retries`, `deadlineMs`). */
  readonly session: SessionOptions;
  /** Sends the stage calls and the drops (signed, trusting the CA: peer-post.ts). */
  readonly post: PeerPost;
  /** @defaultValue {@link DEFAULT_WORK} */
  readonly work?: WorkModel;
  /** Client classes (client-classes.ts): a caller's priority, deadline and limit. */
  readonly classes?: ClientClasses;
  /** Where idempotent generations are kept. */
  readonly idempotency?: IdempotencySettings;
  /** Verifies a share of the stage calls on other copies (verify-span.ts). */
  readonly checks?: SpanChecks;
  /** Told whether each stage call's agent answered (member-bench.ts). */
  readonly outcomes?: CallOutcomes;
}

/**
 * Registers `POST /v1/generate`. The caller's class gives its priority, deadline and limit; a
 * client that hangs up cancels its generation, and the agents its session called are told to
 * drop it when it ends (docs/serve.md, "Cancellation"); a drain closes its gate ("Draining"). A
 * request with an idempotency key is kept in `idempotency`'s store ("Idempotent generation").
 */
export function registerGenerateRoute(app: FastifyInstance, parts: OrchestratorParts, options: GenerateRouteOptions): GenerateRoute {
  const { clock, registry, seat, metrics, models, classLimits } = parts;
  const { classes, idempotency, post } = options;
  const drops = new AgentDrops(registry, post, clock, metrics);
  // This process's session ids are its own: lease ids count from 1 again after a restart, and an
  // agent refuses, for a while, a session id it was told to drop.
  const boot = randomBytes(4).toString('hex');
  const gate = new DrainGate();
  app.post<{ Body: GenerateRequest }>('/v1/generate', { schema: { body: generateBodySchema } }, async (request, reply) => {
    const started = clock.now();
    const hungUp = cancelOnHangUp(reply);
    let passed: AbortController | undefined;
    let member: ClientClass | undefined;
    let generation: Generation | undefined;
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
      const sessionNamespace = replica === undefined ? `${boot}/` : `${replica.view().replica}/${boot}/`;
      const deadlineMs = Math.min(cls?.deadlineMs ?? Number.POSITIVE_INFINITY, options.session.deadlineMs ?? Number.POSITIVE_INFINITY);
      const body = request.body;
      // Refused before it waits what could not finish in time anyway (422, "Limits").
      const g = new Generation({
        swarm,
        request: body,
        calls: { registry, metrics, post, ...(options.outcomes !== undefined ? { outcomes: options.outcomes } : {}) },
        clock,
        session: { ...options.session, ...(Number.isFinite(deadlineMs) ? { deadlineMs } : {}), dropSession: drops.hook(sessionNamespace) },
        ...(options.work !== undefined ? { work: options.work } : {}),
        sessionNamespace,
        priority: cls?.priority ?? 0,
        className: cls?.name ?? 'default',
        signal,
        ...(options.checks !== undefined ? { checks: options.checks } : {}),
      });
      generation = g; // for the refusal's reason, should it fail
      // An idempotency key: claimed, checkpointed, resumed or answered from the store (its progress's signal follows `signal`).
      // A key is its caller's (its token, else its address) and its class's: no other caller can probe, hold or read it.
      const given = idempotencyKeyOf(request.headers['idempotency-key'], body.idempotencyKey);
      const key = given === undefined ? undefined : scopedKey(given, { authorization: request.headers.authorization, address: request.socket.remoteAddress, ...(cls !== undefined ? { className: cls.name } : {}) });
      const answer = key === undefined || idempotency === undefined ? await g.run() : await generateIdempotent({ key, task: g.task, settings: idempotency, clock, cancel: signal }, (progress) => g.run(progress));
      metrics.requests.inc({ outcome: 'ok' });
      metrics.requestSeconds.observe((clock.now() - started) / 1000);
      return answer;
    } catch (error) {
      // Handed back by a drain: the drain's 503 with Retry-After, not the session's abort.
      const answered = asServeError(passed?.signal.aborted === true && passed.signal.reason instanceof ServeError ? passed.signal.reason : error);
      metrics.requests.inc({ outcome: hungUp.aborted ? 'Cancelled' : answered instanceof ServeError ? answered.code : 'Internal' });
      const reason = rejectionOf(answered, hungUp.aborted, generation);
      if (reason !== undefined) metrics.admission.rejections.inc({ reason });
      throw answered;
    } finally {
      if (passed !== undefined) gate.leave(passed);
      if (member !== undefined) classLimits.leave(member);
    }
  });
  return { drops, gate };
}
