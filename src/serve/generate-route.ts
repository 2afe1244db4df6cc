/**
 * `POST /v1/generate` on the orchestrator: one session on the seated swarm's local Swarm (a
 * replica's own, its session ids prefixed with the replica's name), counted in the metrics.
 */
import type { FastifyInstance } from 'fastify';
import type { SessionOptions } from '../sessions/session-types.js';
import { generate, generateBodySchema, type GenerateRequest } from './generate.js';
import type { OrchestratorParts } from './orchestrator-parts.js';
import type { PeerPost } from './peer-post.js';
import { AgentDrops } from './agent-drops.js';
import { cancelOnHangUp } from './client-cancel.js';
import { classOf, type ClientClass, type ClientClasses } from './client-classes.js';
import { DrainGate } from './drain-gate.js';
import { ServeError } from './serve-error.js';
import { DEFAULT_WORK, type WorkModel } from './work-bounds.js';

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
 * ("Draining").
 */
export function registerGenerateRoute(app: FastifyInstance, parts: OrchestratorParts, sessionOptions: SessionOptions, work: WorkModel = DEFAULT_WORK, post?: PeerPost, classes?: ClientClasses): GenerateRoute {
  const { clock, registry, seat, metrics, models, classLimits } = parts;
  const drops = new AgentDrops(registry, post ?? unsigned, clock, metrics);
  const gate = new DrainGate();
  app.post<{ Body: GenerateRequest }>('/v1/generate', { schema: { body: generateBodySchema } }, async (request, reply) => {
    const started = clock.now();
    const hungUp = cancelOnHangUp(reply);
    let passed: AbortController | undefined;
    let member: ClientClass | undefined;
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
      const prefix = replica === undefined ? '' : `${replica.view().replica}/`;
      const deadlineMs = Math.min(cls?.deadlineMs ?? Number.POSITIVE_INFINITY, sessionOptions.deadlineMs ?? Number.POSITIVE_INFINITY);
      const options: SessionOptions = { ...sessionOptions, ...(Number.isFinite(deadlineMs) ? { deadlineMs } : {}), signal, dropSession: drops.hook(prefix) };
      const answer = await generate(swarm, registry, metrics, request.body, options, clock, prefix, work, post);
      metrics.requests.inc({ outcome: 'ok' });
      metrics.requestSeconds.observe((clock.now() - started) / 1000);
      return answer;
    } catch (error) {
      // Handed back by a drain: the drain's 503 with Retry-After, not the session's abort.
      const answered = passed?.signal.aborted === true && passed.signal.reason instanceof ServeError ? passed.signal.reason : error;
      const outcome = hungUp.aborted ? 'Cancelled' : answered instanceof ServeError ? answered.code : 'Internal';
      metrics.requests.inc({ outcome });
      if (answered instanceof ServeError && (answered.code === 'Draining' || answered.code === 'RateLimited')) metrics.admission.rejections.inc({ reason: answered.code });
      throw answered;
    } finally {
      if (passed !== undefined) gate.leave(passed);
      if (member !== undefined) classLimits.leave(member);
    }
  });
  return { drops, gate };
}
