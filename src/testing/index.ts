/**
 * `hecate-swarm/testing`: helpers for testing code that drives a swarm — a clock that moves only
 * when told and a seeded id source, so a run is deterministic. Model-based testing from the
 * Swarm statechart (which needs the optional peer `@xstate/graph`) lives here too.
 * @packageDocumentation
 */
export { ManualClock, seededIds } from '../runtime/index.js';
