export { createSwarm, swarmConfig, Swarm } from './swarm.js';
export type { SwarmActor } from './swarm.js';
export type { LifecycleEvent, PersistedSwarm, PersistedMember, PersistedOutcome } from './persist.js';
export { systemClock, ManualClock } from './clock.js';
export { seededIds, randomIds } from './ids.js';
export type * from './types.js';
export { Session, openSession, executeOnce } from './session.js';
export { timerClock } from './session-options.js';
export type { SessionHost, SessionStage, StageContext, StageRunner, SessionOptions, StepOptions, SessionStats, TimerClock, HistoryOverflow } from './session-types.js';
// The events `swarm.on` delivers and their causes (the Swarm statechart emits them).
export type { SwarmEmitted, LiveStatus } from '../../machines/swarm.machine.js';
export type { DownCause, AliveCause, NodeReport, NodeRecord } from '../../machines/node.machine.js';
