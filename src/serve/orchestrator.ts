/**
 * The HTTP orchestrator of `hecate-node serve`: it embeds a Swarm with failure detection and runs
 * sessions over the agents that join it. Nodes join, heartbeat and leave over HTTP; the Swarm's
 * events drive each agent's state and go out on `GET /v1/events`; `GET /metrics` is Prometheus.
 */
import type { FastifyInstance } from 'fastify';
import { PlanError } from '../core/errors.js';
import type { EjectionOptions } from '../core/ejection.js';
import { resolvePhiOptions, type PhiOptions } from '../core/phi.js';
import type { ModelSpec, NodeProfile } from '../core/types.js';
import { systemClock } from '../runtime/clock.js';
import { createSwarm } from '../runtime/create-swarm.js';
import type { Swarm } from '../runtime/swarm.js';
import type { Clock, SwarmConfig } from '../runtime/types.js';
import { EventStream } from './event-stream.js';
import { generate, generateBodySchema, type GenerateRequest } from './generate.js';
import { createHttpApp, listen } from './http-app.js';
import { joinBodySchema, nodeParamsSchema, type JoinBody } from './node-protocol.js';
import { localMembership, type Membership } from './membership.js';
import { NodeRegistry, type AgentRecord } from './node-registry.js';
import type { Replica } from './replica.js';
import { detectorBounds, SERVE_DETECTOR } from './serve-detector.js';
import { ServeError } from './serve-error.js';
import { ServeMetrics } from './serve-metrics.js';

/** Options of {@link startOrchestrator}. */
export interface OrchestratorOptions {
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
   * The orchestrator's one clock: the embedded Swarm's (detector, leases, session deadlines), every
   * event's `at`, the registry's heartbeat times, a generation's `ms`, the request histogram and the
   * event stream's keep-alive. A `ManualClock` makes all of it move only when told.
   * @defaultValue systemClock
   */
  readonly clock?: Clock;
  /**
   * One of several orchestrators on one swarm (docs/serve.md, "Several orchestrators"): its
   * membership and lifecycle events go through the NATS JetStream log of swarm `swarm`, agents'
   * addresses through a KV bucket, heartbeats through a core NATS subject. Needs `nodes` (every
   * orchestrator plans over the same declared nodes) and the optional NATS packages.
   */
  readonly replication?: { readonly servers: readonly string[]; readonly swarm: string };
  readonly log?: (line: string) => void;
}

export { detectorBounds, SERVE_DETECTOR } from './serve-detector.js';

/** A running orchestrator. */
export interface RunningOrchestrator {
  readonly url: string;
  /** The embedded Swarm, once planned. */
  swarm(): Swarm | undefined;
  close(): Promise<void>;
}

/** Starts the orchestrator and listens. */
export async function startOrchestrator(options: OrchestratorOptions = {}): Promise<RunningOrchestrator> {
  const log = options.log ?? (() => {});
  const clock = options.clock ?? systemClock;
  const models = options.models ?? [{ id: 'base', kind: 'base', layers: 12, pipelines: 2 }];
  const failureDetector = options.failureDetector ?? SERVE_DETECTOR;
  const config: SwarmConfig = { models, failureDetector, ...(options.ejection !== undefined ? { ejection: options.ejection } : {}) };
  const sessionOptions = { stageTimeoutMs: options.stageTimeoutMs ?? 5000, retries: options.retries ?? 3, deadlineMs: options.deadlineMs ?? 60_000 };
  const bounds = detectorBounds(failureDetector);
  const registry = new NodeRegistry();
  const events = new EventStream(clock);
  let swarm: Swarm | undefined;
  let replica: Replica | undefined;
  let membership: Membership = localMembership(() => swarm);

  const metrics = new ServeMetrics({
    nodesByState: () => registry.countByState(),
    inflightByNode: () => new Map([...registry.all()].filter((r) => r.url !== undefined).map((r) => [r.id, r.inflight])),
    routeCostByModel: () => {
      const costs = new Map<string, number>();
      if (swarm === undefined) return costs;
      for (const m of models) {
        try {
          costs.set(m.id, swarm.route({ model: m.id }).cost);
        } catch {
          costs.set(m.id, Number.NaN);
        }
      }
      return costs;
    },
    leases: () => swarm?.inFlight() ?? 0,
  });

  /** Wires a new Swarm's events to the records, the metrics and the stream. */
  const adopt = (created: Swarm): void => {
    swarm = created;
    created.on('*', (event) => {
      const at = clock.now();
      if (event.type === 'status.changed') {
        events.publish(event.type, { at, status: event.status });
        return;
      }
      // A replica's own mark, not yet applied (docs/replication.md); plan changes and cleared doubts are told by the join and heartbeat paths.
      if (event.type === 'node.mark' || event.type === 'node.joined' || event.type === 'node.left' || event.type === 'node.cleared') return;
      const record = registry.get(event.nodeId);
      if (event.type === 'node.suspected') {
        metrics.detection.inc({ event: event.type, cause: 'detector' });
        if (record !== undefined && record.state === 'alive') {
          record.state = 'suspect';
          record.suspectedAt = at;
        }
        events.publish(event.type, { at, nodeId: event.nodeId, silentMs: silence(record, at) });
        return;
      }
      metrics.detection.inc({ event: event.type, cause: event.cause });
      if (event.type === 'node.down') {
        if (record !== undefined && record.state !== 'left' && record.state !== 'absent') {
          record.state = 'down';
          record.downCause = event.cause;
        }
        events.publish(event.type, { at, nodeId: event.nodeId, cause: event.cause, silentMs: silence(record, at), rescue: event.rescue });
      } else {
        if (record !== undefined && record.state !== 'left') {
          record.state = 'alive';
          record.downCause = undefined;
          record.suspectedAt = undefined;
        }
        events.publish(event.type, { at, nodeId: event.nodeId, cause: event.cause });
      }
    });
  };

  /** An agent heard from: directly, or (replicated) through the heartbeat subject from any orchestrator. */
  const heard = (id: string): void => {
    const record = registry.get(id);
    if (record === undefined || swarm === undefined) return;
    const at = clock.now();
    const previous = record.lastHeartbeatAt;
    record.lastHeartbeatAt = at;
    // The Swarm says nothing when a suspect is heard from again: the orchestrator does.
    if (record.state === 'suspect' && swarm.state().nodes[id]?.alive === true) {
      record.state = 'alive';
      events.publish('node.trusted', { at, nodeId: id, suspectedForMs: record.suspectedAt === undefined ? null : at - record.suspectedAt, silentMs: previous === undefined ? null : at - previous });
      record.suspectedAt = undefined;
    }
  };

  if (options.replication !== undefined) {
    if (options.nodes === undefined || options.nodes.length === 0) throw new ServeError('InvalidRequest', 400, 'a replicated orchestrator needs declared nodes (a topology): every orchestrator of a swarm plans over the same ones', { field: 'nodes' });
    const { startReplica } = await import('./replica.js');
    const started = await startReplica({
      ...options.replication,
      nodes: options.nodes,
      config,
      clock,
      onAgent: (id, entry) => {
        if (entry === undefined) {
          const record = registry.get(id);
          if (record !== undefined) record.state = 'left';
          return;
        }
        const record = registry.ensure(entry.profile);
        record.profile = entry.profile;
        record.url = entry.url;
        if (record.state === 'absent' || record.state === 'left' || record.state === 'pending') record.state = swarm?.state().nodes[id]?.alive === true ? 'alive' : 'down';
      },
      onHeard: heard,
    });
    replica = started;
    membership = started.membership;
    for (const profile of options.nodes) registry.ensure(profile);
    adopt(started.swarm);
    started.onReplication((status, applied) => events.publish('replication.changed', { at: clock.now(), status, applied }));
    // Declared nodes no agent has joined yet are down until one does, as alone. Proposed by every
    // orchestrator that starts (a duplicate down is a no-op); one that lands after the agent
    // joined elsewhere is undone by its next heartbeat (see heartbeat below).
    for (const profile of options.nodes) {
      const record = registry.get(profile.id);
      if (record?.url === undefined && started.swarm.state().nodes[profile.id]?.alive === true) {
        await started.membership.markDown(profile.id).catch((error: unknown) => log(`declared node "${profile.id}" not marked down: ${String(error)}`));
      }
    }
    // What the log says of each node, now that the records exist.
    for (const record of registry.all()) {
      const node = started.swarm.state().nodes[record.id];
      if (record.url !== undefined && node !== undefined && record.state !== 'left') record.state = node.alive ? 'alive' : 'down';
    }
  } else if (options.nodes !== undefined && options.nodes.length > 0) {
    // Declared nodes: planned now, down until their agent joins (before any listener: not events).
    const created = createSwarm(options.nodes, config, { clock });
    for (const profile of options.nodes) {
      registry.ensure(profile);
      created.markDown(profile.id);
    }
    adopt(created);
  }

  /** Without declared nodes: plan once the joined agents can hold every copy. */
  const tryPlan = (): void => {
    if (swarm !== undefined) return;
    const pending = [...registry.all()].filter((r) => r.state === 'pending');
    try {
      const created = createSwarm(pending.map((r) => r.profile), config, { clock });
      adopt(created);
      for (const r of pending) {
        r.state = 'alive';
        created.heartbeat(r.id);
      }
      log(`planned the swarm over ${pending.length} agents: ${created.state().plan.pipelines.map((p) => `${p.id} [${p.stages.map((s) => s.nodeId).join(' → ')}]`).join(', ')}`);
      events.publish('swarm.planned', { at: clock.now(), plan: created.state().plan, status: created.status() });
    } catch (error) {
      if (!(error instanceof PlanError && error.code === 'InsufficientCapacity')) throw error;
    }
  };

  const join = async (body: JoinBody): Promise<{ id: string; rejoin: boolean; state: string }> => {
    const profile: NodeProfile = { id: body.id, memoryGb: body.memoryGb, ...(body.score !== undefined ? { score: body.score } : {}), ...(body.latencyMs !== undefined ? { latencyMs: body.latencyMs } : {}) };
    const record = registry.ensure(profile);
    const rejoin = record.joins > 0;
    const url = body.url.replace(/\/+$/, '');
    // Shared first: the other orchestrators must be able to call it once it is in the plan.
    await replica?.directory.put({ profile, url });
    record.joins++;
    record.url = url;
    record.lastHeartbeatAt = clock.now();
    metrics.joins.inc({ kind: rejoin ? 'rejoin' : 'join' });
    if (swarm === undefined) {
      record.profile = profile;
      record.state = 'pending';
      events.publish('node.joined', { at: clock.now(), nodeId: body.id, url: record.url, rejoin });
      tryPlan();
      return { id: body.id, rejoin, state: record.state };
    }
    const known = swarm.state().nodes[body.id] !== undefined;
    if (!known) {
      record.profile = profile;
      const role = await membership.addNode(profile);
      record.state = 'alive';
      log(`agent "${body.id}" joined the running swarm as ${role}`);
    }
    events.publish('node.joined', { at: clock.now(), nodeId: body.id, url: record.url, rejoin });
    // A heartbeat brings back a node the detector took down (node.alive, cause heartbeat); one
    // marked down (never joined, left) or ejected needs the orchestrator's word: it joined again.
    membership.heartbeat(body.id);
    if (swarm.state().nodes[body.id]?.alive !== true) await membership.markAlive(body.id);
    record.state = 'alive';
    record.downCause = undefined;
    record.suspectedAt = undefined;
    return { id: body.id, rejoin, state: record.state };
  };

  const heartbeat = async (id: string): Promise<{ id: string; state: string }> => {
    const record = registry.get(id);
    if (record === undefined || record.url === undefined || record.state === 'left') throw new ServeError('UnknownNode', 404, `no agent "${id}" has joined; POST /v1/nodes first`, { field: 'id' });
    record.heartbeats++;
    metrics.heartbeats.inc();
    if (swarm === undefined || swarm.state().nodes[id] === undefined) {
      record.lastHeartbeatAt = clock.now();
      return { id, state: record.state };
    }
    membership.heartbeat(id);
    // Replicated, the beat comes back through NATS to every orchestrator, this one too.
    if (replica === undefined) heard(id);
    // Joined, heartbeating, yet down by hand: a declared node's initial down that another
    // orchestrator proposed after this agent joined (docs/serve.md). It is here: alive.
    if (record.state === 'down' && record.downCause === 'manual') await membership.markAlive(id);
    return { id, state: record.state };
  };

  const leave = async (id: string): Promise<{ id: string; how: string }> => {
    const record = registry.get(id);
    if (record === undefined || record.url === undefined) throw new ServeError('UnknownNode', 404, `no agent "${id}" has joined`, { field: 'id' });
    let how = 'left';
    if (swarm !== undefined && swarm.state().nodes[id] !== undefined) {
      try {
        await membership.removeNode(id);
        how = 'removed';
      } catch (error) {
        // The plan cannot do without it (no room to relocate): keep it in the plan, down.
        if (!(error instanceof PlanError)) throw error;
        await membership.markDown(id);
        how = 'marked down';
      }
    }
    await replica?.directory.remove(id);
    record.state = 'left';
    metrics.leaves.inc();
    events.publish('node.left', { at: clock.now(), nodeId: id, how });
    return { id, how };
  };

  const app: FastifyInstance = createHttpApp();
  app.post<{ Body: JoinBody }>('/v1/nodes', { schema: { body: joinBodySchema } }, (request) => join(request.body));
  app.post<{ Params: { id: string } }>('/v1/nodes/:id/heartbeat', { schema: { params: nodeParamsSchema } }, (request) => heartbeat(request.params.id));
  app.post<{ Params: { id: string } }>('/v1/nodes/:id/leave', { schema: { params: nodeParamsSchema } }, (request) => leave(request.params.id));
  app.post<{ Body: GenerateRequest }>('/v1/generate', { schema: { body: generateBodySchema } }, async (request) => {
    const started = clock.now();
    try {
      if (swarm === undefined) throw new ServeError('NoSwarm', 503, `no swarm yet: the agents that joined (${[...registry.all()].map((r) => r.id).join(', ') || 'none'}) cannot hold every copy of ${models.map((m) => `"${m.id}"`).join(', ')}`);
      const reply = await generate(swarm, registry, metrics, request.body, sessionOptions, clock, replica === undefined ? '' : `${replica.view().replica}/`);
      metrics.requests.inc({ outcome: 'ok' });
      metrics.requestSeconds.observe((clock.now() - started) / 1000);
      return reply;
    } catch (error) {
      metrics.requests.inc({ outcome: error instanceof ServeError ? error.code : 'Internal' });
      throw error;
    }
  });
  app.get('/v1/status', async () => ({
    status: swarm?.status() ?? 'planning',
    ...(replica !== undefined ? { replication: replica.view() } : {}),
    models,
    plan: swarm?.state().plan ?? null,
    nodes: registry.view(clock.now()),
    leases: swarm?.inFlight() ?? 0,
    detector: { ...resolvePhiOptions(failureDetector), ...bounds, heartbeatMs: 1000 },
    session: sessionOptions,
  }));
  app.get('/v1/events', (request, reply) => {
    reply.hijack();
    events.attach(reply.raw, { at: clock.now(), status: swarm?.status() ?? 'planning', nodes: registry.view(clock.now()) });
    request.raw.on('close', () => reply.raw.end());
  });
  app.get('/metrics', async (_request, reply) => {
    void reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
  app.addHook('onClose', async () => {
    events.close();
    if (replica !== undefined) await replica.close();
    else swarm?.stop();
  });

  const url = await listen(app, options.host ?? '127.0.0.1', options.port ?? 0);
  log(`orchestrator on ${url}; detector: suspect after ${bounds.suspectAfterMs} ms, down after ${bounds.downAfterMs} ms of silence (1 s heartbeats)`);
  return {
    url,
    swarm: () => swarm,
    async close() {
      events.close();
      await app.close();
    },
  };
}

function silence(record: AgentRecord | undefined, at: number): number | null {
  return record?.lastHeartbeatAt === undefined ? null : at - record.lastHeartbeatAt;
}
