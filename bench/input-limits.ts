/**
 * Topologies at the CLI's documented limits (docs/inputs.md): each must load and run the whole
 * `swarm-sim` lifecycle in a few seconds, so that no accepted file can make the CLI run for
 * minutes. Measured as the CLI does it (parse, validate, capacity check, run), wall-clock, against
 * the seed topology `examples/swarm.json` in the same run.
 */
import { readFileSync } from 'node:fs';
import { loadTopology, runSwarmSim, TOPOLOGY_LIMITS } from '../src/sim/index.js';
import { medianMs, QUICK } from './measure.js';
import type { BenchRow } from './types.js';

/** What "a few seconds" means for one run at the limits. */
const TARGET_MS = 5_000;

/** A topology text: `nodes` nodes of ample memory, `models` models of `layers` layers in `copies` copies. */
function topologyText(nodes: number, models: number, layers: number, copies: number): string {
  return JSON.stringify({
    models: Array.from({ length: models }, (_, i) => ({ id: `m${i}`, layers, pipelines: copies, layerGb: 0.001 })),
    nodes: Array.from({ length: nodes }, (_, i) => ({ id: `n${i}`, memoryGb: 1e6, score: 1 + (i % 7) })),
  });
}

function runOnce(text: string, file: string): void {
  const loaded = loadTopology(text, file);
  if (!loaded.ok) throw loaded.error;
  runSwarmSim(loaded.value, { seed: 1, source: file });
}

/** One row per shape at the limits; the target is absolute, the seed topology is the reference. */
export function inputLimitsBench(log: (line: string) => void): BenchRow[] {
  const { nodes, models, totalLayers, pipelines } = TOPOLOGY_LIMITS;
  const shapes: [string, string][] = [
    [`${nodes} nodes, 1 model x ${totalLayers} layers x ${pipelines} copies`, topologyText(nodes, 1, totalLayers, pipelines)],
    [`${nodes} nodes, 1 model x ${totalLayers} layers x 2 copies`, topologyText(nodes, 1, totalLayers, 2)],
    [`${nodes} nodes, ${models} models x ${totalLayers / models} layers x 2 copies`, topologyText(nodes, models, totalLayers / models, 2)],
    [`${nodes} nodes, ${models} models x ${totalLayers / models} layers x ${pipelines} copies`, topologyText(nodes, models, totalLayers / models, pipelines)],
  ];
  const seed = readFileSync(new URL('../../examples/swarm.json', import.meta.url), 'utf8');
  const rounds = QUICK ? 1 : 3;
  const seedMs = medianMs(rounds, () => runOnce(seed, 'examples/swarm.json'));
  return shapes.map(([size, text]) => {
    log(`input limits: ${size}`);
    const ms = medianMs(rounds, () => runOnce(text, 'limits.json'));
    return {
      name: 'swarm-sim at the topology limits',
      size,
      median: Math.round(ms),
      unit: 'ms',
      baselineName: 'examples/swarm.json',
      baseline: Math.round(seedMs * 100) / 100,
      ratio: Math.round(ms / seedMs),
      target: `<= ${TARGET_MS} ms`,
      pass: ms <= TARGET_MS,
    };
  });
}
