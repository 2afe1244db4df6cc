// The lifecycle of docs/design.md §7, end to end, against the built package: `node examples/lifecycle.mjs`.
import { createSwarm, swarmConfig } from 'hecate-swarm';

const profiles = [
  { id: 'gpu', memoryGb: 24, score: 10, latencyMs: 4 },
  { id: 'desktop', memoryGb: 16, score: 5, latencyMs: 6 },
  { id: 'laptop', memoryGb: 16, score: 3, latencyMs: 9 },
  { id: 'phone', memoryGb: 6, score: 0.5, latencyMs: 30 },
];

const swarm = createSwarm(profiles, swarmConfig(12, 2), { seed: 1 });
const show = (what, value) => console.log(what.padEnd(10), JSON.stringify(value));

const route = swarm.route({ tokens: 512 });
show('route', { pipeline: route.pipelineId, nodes: route.stages.map((s) => s.nodeId), cost: route.cost });

const rescue = swarm.markDown('gpu'); // rescue computed from the route that used gpu, then gpu marked down
show('markDown', { status: rescue.status, strategies: rescue.recoveries.map((r) => r.strategy), to: rescue.recoveries[0]?.route.stages.map((s) => s.nodeId) });

swarm.report('desktop', { load: 0.7, latencyMs: 9 }); // telemetry into the node actor's EWMA
show('report', swarm.state().nodes.desktop);

show('markAlive', swarm.markAlive('gpu'));
show('addNode', swarm.addNode({ id: 'mini', memoryGb: 16, score: 4, latencyMs: 7 }));
show('remove', swarm.removeNode('laptop'));
show('status', swarm.status());
swarm.stop();
show('stopped', swarm.status());
