/**
 * The agents' side of the orchestrator: `POST /v1/nodes` (join), `/v1/nodes/:id/heartbeat` and
 * `/v1/nodes/:id/leave`. The address book takes where an agent listens and whether it left; before
 * the plan the waiting room takes its membership and heartbeats; after, the swarm takes them,
 * through the one Swarm contract (awaited: a replica's commands resolve once the log applies
 * them). The answers read the state back from those owners (agent-view.ts).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { PlanError } from '../core/errors.js';
import type { NodeProfile } from '../core/types.js';
import { bindJoinKey } from './auth/orchestrator-guard.js';
import { AGENT_KEY_HEADERS } from '../wire/agent-key.js';
import { stateOf, type AgentState } from './agent-view.js';
import { joinBodySchema, MEMBER_BODY_LIMIT, nodeParamsSchema, readHeartbeat, type HeartbeatBody, type JoinBody } from '../wire/member-protocol.js';
import { planWhenReady } from './open-swarm.js';
import type { OrchestratorParts } from './orchestrator-parts.js';
import { ServeError } from '../wire/serve-error.js';
import { admitJoin, refuseSpentSource, type JoinEdge } from './join-edge.js';
import type { MemberBench } from './member-bench.js';

/** The memory the plan sees of an agent offering `memoryGb`: less `reserveGb` (an end stage's embeddings and head), never below 0. */
export function plannedMemoryGb(memoryGb: number, reserveGb: number): number {
  return Math.max(0, memoryGb - reserveGb);
}

/** Registers the join, heartbeat and leave routes; the plan sees a joining agent's memory less `reserveGb`. */
export function registerAgentRoutes(app: FastifyInstance, parts: OrchestratorParts, edge?: JoinEdge, reserveGb = 0): void {
  // A spent source's join of a new id is refused before its signature is checked (join-edge.ts).
  const early = edge === undefined ? [] : [async (request: FastifyRequest) => refuseSpentSource(parts, edge, request.body, request.socket.remoteAddress ?? request.ip, credentialOf(request))];
  app.post<{ Body: JoinBody }>('/v1/nodes', { schema: { body: joinBodySchema }, bodyLimit: MEMBER_BODY_LIMIT, preValidation: early }, async (request) => {
    // The key header was verified by the guard before this handler runs (when the orchestrator has one).
    const body = edge === undefined ? request.body : admitJoin(parts, edge, request.body, request.socket.remoteAddress ?? request.ip, credentialOf(request));
    await bindJoinKey(request); // an id is bound to its key only by a join the edge admitted
    return join(parts, { ...body, memoryGb: plannedMemoryGb(body.memoryGb, reserveGb) }, edge);
  });
  app.post<{ Params: { id: string } }>('/v1/nodes/:id/heartbeat', { schema: { params: nodeParamsSchema }, bodyLimit: MEMBER_BODY_LIMIT }, (request) => heartbeat(parts, request.params.id, readHeartbeat(request.body), edge?.bench));
  app.post<{ Params: { id: string } }>('/v1/nodes/:id/leave', { schema: { params: nodeParamsSchema }, bodyLimit: MEMBER_BODY_LIMIT }, (request) => leave(parts, request.params.id));
}

/** The member credential a join is limited by: the agent key it is signed with, if any. */
function credentialOf(request: FastifyRequest): string | undefined {
  const key = request.headers[AGENT_KEY_HEADERS.key];
  return typeof key === 'string' ? key : undefined;
}

/** The models an agent serves layers of, in a join's answer: it refuses stage calls outside them. */
type JoinAnswer = { id: string; rejoin: boolean; state: AgentState; models: { id: string; layers: number }[] };

/** An agent joins (or joins again, restarted): into the swarm, or waiting for one. */
export async function join(parts: OrchestratorParts, body: JoinBody, edge?: JoinEdge): Promise<JoinAnswer> {
  const answered = await joined(parts, body, edge?.bench);
  edge?.silent.joined(body.id);
  return { ...answered, models: parts.models.map((m) => ({ id: m.id, layers: m.layers })) };
}

async function joined(parts: OrchestratorParts, body: JoinBody, bench?: MemberBench): Promise<{ id: string; rejoin: boolean; state: AgentState }> {
  const { registry, room, seat, clock, events, metrics, log } = parts;
  const profile: NodeProfile = { id: body.id, memoryGb: body.memoryGb, ...(body.score !== undefined ? { score: body.score } : {}), ...(body.latencyMs !== undefined ? { latencyMs: body.latencyMs } : {}), ...(body.slots !== undefined ? { slots: body.slots } : {}) };
  const url = body.url.replace(/\/+$/, '');
  // Shared first: the other orchestrators must be able to call it once it is in the plan.
  await seat.replica?.directory.put({ profile, url });
  const { rejoin } = registry.joined(profile, url);
  metrics.joins.inc({ kind: rejoin ? 'rejoin' : 'join' });
  const swarm = seat.swarm;
  if (swarm === undefined) {
    room.enter(profile, clock.now());
    events.publish('node.joined', { at: clock.now(), nodeId: body.id, url, rejoin });
    planWhenReady(parts);
    return { id: body.id, rejoin, state: stateOf(parts, body.id) };
  }
  if (swarm.node(body.id) === undefined) {
    const growth = await swarm.addNode(profile);
    log(`agent "${body.id}" joined the running swarm as ${growth.role}`);
  }
  events.publish('node.joined', { at: clock.now(), nodeId: body.id, url, rejoin });
  // A join is heard like a heartbeat. A heartbeat brings back a node the detector took down
  // (node.alive, cause heartbeat); one marked down (never joined, left) needs the orchestrator's
  // word: it joined again (an ejected one too: a restarted agent). Not a quarantined one: only
  // the operator ends a quarantine (docs/security.md, "Verification"), and joining again would be
  // a way around it. Nor a benched one: only a probe it answers brings it back (member-bench.ts).
  swarm.heartbeat(body.id);
  const node = swarm.node(body.id);
  if (bench?.holds(body.id) === true) await bench.keepOut(body.id);
  else if (node?.state === 'down' && node.cause !== 'integrity') await swarm.markAlive(body.id);
  return { id: body.id, rejoin, state: stateOf(parts, body.id) };
}

/** A heartbeat of a joined agent: counted, its report kept in the address book, and to its owner (the waiting room, or the swarm's node actor). */
export async function heartbeat(parts: OrchestratorParts, id: string, report: HeartbeatBody = {}, bench?: MemberBench): Promise<{ id: string; state: AgentState }> {
  const { registry, room, seat, clock, metrics } = parts;
  const record = registry.get(id);
  if (record === undefined || record.url === undefined || record.left) throw new ServeError('UnknownNode', 404, `no agent "${id}" has joined; POST /v1/nodes first`, { field: 'id' });
  registry.heard(id, report);
  metrics.heartbeats.inc();
  const swarm = seat.swarm;
  if (swarm === undefined) {
    room.heard(id, clock.now());
    return { id, state: stateOf(parts, id) };
  }
  // A replica whose log has not added it yet: nothing to hear it (it is pending until then).
  if (swarm.node(id) === undefined) return { id, state: stateOf(parts, id) };
  // Replicated, the beat goes through NATS to every orchestrator's node actor, this one's too.
  swarm.heartbeat(id);
  // Joined, heartbeating, yet down by hand: a declared node's initial down that another
  // orchestrator proposed after this agent joined (docs/serve.md). It is here: alive. A benched
  // member's heartbeat is a chance to probe it, not a proof (member-bench.ts).
  const node = swarm.node(id);
  if (bench?.holds(id) === true) await bench.keepOut(id);
  else if (node?.state === 'down' && node.cause === 'manual') await swarm.markAlive(id);
  return { id, state: stateOf(parts, id) };
}

/** An agent leaves: out of the plan if it can do without it, else kept in it, down; its address withdrawn. */
export async function leave(parts: OrchestratorParts, id: string): Promise<{ id: string; how: string }> {
  const { registry, room, seat, clock, events, metrics } = parts;
  const record = registry.get(id);
  if (record === undefined || record.url === undefined) throw new ServeError('UnknownNode', 404, `no agent "${id}" has joined`, { field: 'id' });
  let how = 'left';
  const swarm = seat.swarm;
  const heardAt = swarm?.node(id)?.heardAt ?? room.heardAt(id) ?? record.heardBeforeLeaving;
  room.leave(id);
  if (swarm !== undefined && swarm.node(id) !== undefined) {
    try {
      await swarm.removeNode(id);
      how = 'removed';
    } catch (error) {
      // The plan cannot do without it (no room to relocate): keep it in the plan, down.
      if (!(error instanceof PlanError)) throw error;
      await swarm.markDown(id);
      how = 'marked down';
    }
  }
  await seat.replica?.directory.remove(id);
  registry.withdraw(id, heardAt);
  metrics.leaves.inc();
  events.publish('node.left', { at: clock.now(), nodeId: id, how });
  return { id, how };
}
