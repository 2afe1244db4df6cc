export { createSwarm, swarmConfig, Swarm } from './swarm.js';
export type { SwarmActor } from './swarm.js';
export { systemClock, ManualClock } from './clock.js';
export { seededIds, randomIds } from './ids.js';
export { planGrowth, planRetirement } from './telomerase.js';
export type { GrowthDecision, RetirementDecision } from './telomerase.js';
export type * from './types.js';
export { Session, openSession, executeOnce, timerClock } from './session.js';
export type { SessionHost, SessionStage, StageContext, StageRunner, SessionOptions, StepOptions, SessionStats, TimerClock, HistoryOverflow } from './session-types.js';
