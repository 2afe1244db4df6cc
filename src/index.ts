/**
 * hecate-swarm: decides which copy of a model serves each inference request across a swarm of
 * machines, and what happens when a machine dies, comes back, joins or retires.
 * @packageDocumentation
 */
export * from './core/index.js';
export * from './runtime/index.js';
export * from './sim/index.js';
export { nodeMachine } from '../machines/node.machine.js';
export type { NodeContext, NodeEvent, NodeInput, NodeSample } from '../machines/node.machine.js';
export { swarmMachine, isAliveIn, isMember, aliveMembers, joinIssue, livenessView, computeRescue } from '../machines/swarm.machine.js';
export type { SwarmContext, SwarmEvent, SwarmInput, SwarmOutcome, PendingRescue, NodeActorRef, Member, RescueIndex } from '../machines/swarm.machine.js';
