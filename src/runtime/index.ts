export { createSwarm, swarmConfig, Swarm } from './swarm.js';
export type { SwarmActor } from './swarm.js';
export { systemClock, ManualClock } from './clock.js';
export { seededIds, randomIds } from './ids.js';
export type * from './types.js';
