export { createSwarm, swarmConfig, Swarm } from './swarm.js';
export type { SwarmActor } from './swarm.js';
export { systemClock, ManualClock } from './clock.js';
export { seededIds, randomIds } from './ids.js';
export type * from './types.js';
// The events `swarm.on` delivers and their causes (the Swarm statechart emits them).
export type { SwarmEmitted, LiveStatus } from '../../machines/swarm.machine.js';
export type { DownCause, AliveCause, NodeReport, NodeRecord } from '../../machines/node.machine.js';
