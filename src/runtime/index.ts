export { Swarm } from './swarm.js';
export { createSwarm, swarmConfig } from './create-swarm.js';
export type { SwarmActor } from './swarm.js';
export type { SwarmContract, CommitMode, Committed, LifecycleCommand, LifecycleResult, NodeLifecycle, NodeState } from './swarm-contract.js';
export { systemClock, ManualClock } from './clock.js';
export { seededIds, randomIds } from './ids.js';
export type { PrefixStats, PrefixPlugin, PrefixHook, PrefixHost } from './prefix-hook.js';
export type * from './types.js';
// The events `swarm.on` delivers and their causes (the Swarm statechart emits them).
export type { SwarmEmitted, LiveStatus, OwnMark } from '../../machines/swarm.machine.js';
export type { DownCause, AliveCause, NodeReport, NodeRecord } from '../../machines/node.machine.js';
