/**
 * `hecate-swarm/sessions`: requests run as sessions that resume from the span that failed
 * (docs/sessions.md). `createSessionSwarm` is the root's `createSwarm`, returning a swarm with `session` and
 * `execute`; `openSession(swarm, …)` and `executeOnce(swarm, …)` run on any swarm (a restored
 * or replicated one's local swarm too) or on a host of your own.
 * @packageDocumentation
 */
export { createSessionSwarm, SessionSwarm, openSession, executeOnce, swarmSessionHost } from './session-swarm.js';
export { Session } from './session.js';
export { NodeBusyError } from './node-busy.js';
export { StateLostError } from './state-lost.js';
export { timerClock } from './session-options.js';
export { verifySpans } from './span-verifier.js';
export { SpanStanding, STANDING_CAP, OUTWEIGH } from './span-standing.js';
export type { NodeStanding, SpanStandingOptions } from './span-standing.js';
export type { SpanHop, SpanVerdict, SpanVerifier, SpanVerifierOptions, SpanVerifierStats } from './span-verifier.js';
export type { SessionHost, SessionStage, StageContext, StageRunner, SessionOptions, StepOptions, SessionStats, TimerClock, HistoryOverflow } from './session-types.js';
