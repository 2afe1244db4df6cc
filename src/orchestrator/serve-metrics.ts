/**
 * `GET /metrics`: the orchestrator's Prometheus registry (prom-client). Counters are bumped where
 * things happen; gauges of state (nodes by state, in-flight calls, route cost) are read from the
 * orchestrator when scraped, so they cannot drift.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { AdmissionMetrics, type AdmissionSource } from './admission-metrics.js';
import { NODE_STATES } from '../runtime/node-lifecycle.js';
import type { AgentState } from './agent-view.js';

/** What the gauges read at scrape time. */
export interface MetricsSource extends AdmissionSource {
  nodesByState(): ReadonlyMap<AgentState, number>;
  /** Stage calls in flight, per node. */
  inflightByNode(): ReadonlyMap<string, number>;
  /** Bytes of KV cache each agent's last heartbeat reported (agents that report it, joined and not forgotten). @defaultValue none */
  kvBytesByNode?(): ReadonlyMap<string, number>;
  /** The cost of the route each model would get now (NaN when it has none). */
  routeCostByModel(): ReadonlyMap<string, number>;
  /** Reservations the Swarm holds. */
  leases(): number;
  /** With `--nats`: this replica's id and its lag (log entries behind the stream's end, docs/replication.md). */
  replicationLag?(): { readonly replica: string; readonly lag: number; readonly rejected?: number; readonly rejectedMessages?: number } | undefined;
}

/** The orchestrator's metrics. */
export class ServeMetrics {
  readonly registry = new Registry();
  /** Generate requests by outcome (`ok` or the error code). */
  readonly requests = new Counter({ name: 'hecate_requests_total', help: 'POST /v1/generate requests by outcome (ok, or the error code).', labelNames: ['outcome'] as const, registers: [this.registry] });
  readonly requestSeconds = new Histogram({ name: 'hecate_request_duration_seconds', help: 'Time to serve a generate request that completed.', buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers: [this.registry] });
  readonly resumes = new Counter({ name: 'hecate_session_resumes_total', help: 'Stage failures a session resumed from (re-routed the remaining layers).', registers: [this.registry] });
  readonly steps = new Counter({ name: 'hecate_session_steps_total', help: 'Session steps completed.', registers: [this.registry] });
  readonly stageCalls = new Counter({ name: 'hecate_stage_calls_total', help: 'Stage calls to agents, by node and outcome (ok, error, aborted).', labelNames: ['node', 'outcome'] as const, registers: [this.registry] });
  readonly detection = new Counter({ name: 'hecate_detection_events_total', help: 'Events of the Swarm: node.suspected, node.down (by cause), node.alive (by cause).', labelNames: ['event', 'cause'] as const, registers: [this.registry] });
  readonly joins = new Counter({ name: 'hecate_node_joins_total', help: 'Agent joins; kind=rejoin when the id had joined before (a restart).', labelNames: ['kind'] as const, registers: [this.registry] });
  readonly leaves = new Counter({ name: 'hecate_node_leaves_total', help: 'Agents that left cleanly.', registers: [this.registry] });
  readonly heartbeats = new Counter({ name: 'hecate_heartbeats_total', help: 'Heartbeats received.', registers: [this.registry] });
  readonly joinsRefused = new Counter({ name: 'hecate_node_joins_refused_total', help: 'Joins refused, by reason (url, rate, full).', labelNames: ['reason'] as const, registers: [this.registry] });
  readonly verifications = new Counter({ name: 'hecate_verifications_total', help: 'Stage calls run again on another copy, by verdict (agreed, quarantined, inconclusive, skipped).', labelNames: ['verdict'] as const, registers: [this.registry] });
  readonly forgotten = new Counter({ name: 'hecate_nodes_forgotten_total', help: 'Agents that joined and never heartbeated within the grace period, forgotten.', registers: [this.registry] });
  readonly bench = new Counter({ name: 'hecate_node_bench_total', help: 'Members benched for unanswered stage calls, probes they failed, and readmissions after a probe they answered (member-bench.ts).', labelNames: ['event'] as const, registers: [this.registry] });
  readonly promptTokens = new Counter({ name: 'hecate_prompt_tokens_total', help: 'Prompt tokens of generate requests (about four characters a token).', registers: [this.registry] });
  readonly cachedTokens = new Counter({ name: 'hecate_cached_tokens_total', help: 'Prompt tokens cached on the chosen copy: source=router, the swarm index estimate at routing; source=agent, what the first stage reported.', labelNames: ['source'] as const, registers: [this.registry] });
  /** Running sums behind hecate_prefix_hit_rate (cache-report.ts). */
  readonly prefix = { prompt: 0, router: 0, agent: 0 };
  readonly sseDropped = new Counter({ name: 'hecate_sse_clients_dropped_total', help: 'GET /v1/events clients dropped for not reading: their unsent events passed the per-client buffer cap.', registers: [this.registry] });
  readonly drops = new Counter({ name: 'hecate_session_drops_total', help: 'Ended sessions the agents holding their state were told to drop (POST /v1/sessions/drop), by outcome (ok, refused, unreachable).', labelNames: ['outcome'] as const, registers: [this.registry] });

  /** Admission: saturation, queue depth per band, wait times, refusals by reason (admission-metrics.ts). */
  readonly admission: AdmissionMetrics;

  /** The outcomes counted for each node in `stageCalls`: what {@link forgetNode} removes. */
  private readonly stageOutcomes = new Map<string, Set<string>>();

  /** Counts one stage call to `node` by its outcome. */
  countStageCall(node: string, outcome: string): void {
    this.stageCalls.inc({ node, outcome });
    let outcomes = this.stageOutcomes.get(node);
    if (outcomes === undefined) this.stageOutcomes.set(node, (outcomes = new Set()));
    outcomes.add(outcome);
  }

  /** Drops every series of `node` (it was forgotten): `hecate_stage_calls_total`; the gauges read only known nodes. */
  forgetNode(node: string): void {
    for (const outcome of this.stageOutcomes.get(node) ?? []) this.stageCalls.remove({ node, outcome });
    this.stageOutcomes.delete(node);
  }

  constructor(source: MetricsSource) {
    this.admission = new AdmissionMetrics(this.registry, source);
    new Gauge({
      name: 'hecate_nodes',
      help: `Agents by state (${[...NODE_STATES, 'left'].join(', ')}; absent: declared, never joined; pending: joined, waiting for capacity).`,
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [state, n] of source.nodesByState()) this.set({ state }, n);
      },
    });
    new Gauge({
      name: 'hecate_node_inflight',
      help: 'Stage calls running on each agent.',
      labelNames: ['node'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [node, n] of source.inflightByNode()) this.set({ node }, n);
      },
    });
    new Gauge({
      name: 'hecate_node_kv_bytes',
      help: 'Bytes of KV cache each agent holds, as its last heartbeat reported (agents whose engine keeps one); a forgotten agent\'s series goes with it.',
      labelNames: ['node'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [node, n] of source.kvBytesByNode?.() ?? []) this.set({ node }, n);
      },
    });
    new Gauge({
      name: 'hecate_route_cost',
      help: 'Cost of the route each model would get now (docs/design.md §4), without reserving it.',
      labelNames: ['model'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [model, cost] of source.routeCostByModel()) if (Number.isFinite(cost)) this.set({ model }, cost);
      },
    });
    const prefix = this.prefix;
    new Gauge({
      name: 'hecate_prefix_hit_rate',
      help: 'Cached prompt tokens over prompt tokens since start: source=router (estimated), source=agent (reported).',
      labelNames: ['source'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        if (prefix.prompt > 0) for (const source of ['router', 'agent'] as const) this.set({ source }, prefix[source] / prefix.prompt);
      },
    });
    new Gauge({
      name: 'hecate_leases',
      help: 'Reservations the Swarm holds (sessions in flight).',
      registers: [this.registry],
      collect() {
        this.set(source.leases());
      },
    });
    new Gauge({
      name: 'hecate_replication_lag',
      help: 'With --nats: log entries on the stream behind the last one this replica was handed (docs/replication.md).',
      labelNames: ['replica'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        const r = source.replicationLag?.();
        if (r !== undefined) this.set({ replica: r.replica }, r.lag);
      },
    });
    new Gauge({
      name: 'hecate_replication_rejected',
      help: 'With --nats and the swarm secret: what this replica dropped, not signed with the secret, too old or a replay, by kind (entry: log entries; message: heartbeats, announcements, directory entries; docs/security.md).',
      labelNames: ['replica', 'kind'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        const r = source.replicationLag?.();
        if (r === undefined) return;
        this.set({ replica: r.replica, kind: 'entry' }, r.rejected ?? 0);
        this.set({ replica: r.replica, kind: 'message' }, r.rejectedMessages ?? 0);
      },
    });
  }
}
