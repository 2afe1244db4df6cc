/** The orchestrator's `/metrics` registry (docs/serve.md): the replica-lag gauge with `--nats`, none alone. */
import { describe, expect, it } from 'vitest';
import { ServeMetrics, type MetricsSource } from '../../src/orchestrator/serve-metrics.js';

const alone: MetricsSource = { nodesByState: () => new Map(), inflightByNode: () => new Map(), routeCostByModel: () => new Map(), leases: () => 0 };

describe('ServeMetrics', () => {
  it('shows a replica\'s lag as one gauge labelled with its id, and no series for an orchestrator alone', async () => {
    let lag = 7;
    const replicated = new ServeMetrics({ ...alone, replicationLag: () => ({ replica: 'r1', lag }) });
    expect(await replicated.registry.metrics()).toMatch(/^hecate_replication_lag\{replica="r1"\} 7$/m);
    lag = 0;
    expect(await replicated.registry.metrics()).toMatch(/^hecate_replication_lag\{replica="r1"\} 0$/m);
    expect(await new ServeMetrics(alone).registry.metrics()).not.toMatch(/^hecate_replication_lag\{/m);
  });
});
