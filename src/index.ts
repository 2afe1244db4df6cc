/**
 * hecate-swarm: decides which copy of a model serves each inference request across a swarm of
 * machines, and what happens when a machine dies, comes back, joins or retires.
 * @packageDocumentation
 */
export * from './core/index.js';
