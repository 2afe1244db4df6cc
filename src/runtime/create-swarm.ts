import type { ModelSpec, NodeProfile } from '../core/types.js';
import { Swarm } from './swarm.js';
import type { SwarmConfig, SwarmOptions } from './types.js';

/**
 * Creates and starts a swarm: plans every copy of every model over `profiles`, spawns one actor
 * per node and the Swarm statechart over them.
 * @throws {PlanError} for bad profiles or models, or `InsufficientCapacity`
 * @throws {SwarmError} `InvalidInput` for a bad option
 * @example
 * const swarm = createSwarm(profiles, swarmConfig(12, 2));
 * swarm.route({ tokens: 512 });
 */
export function createSwarm(profiles: readonly NodeProfile[], config: SwarmConfig, options: SwarmOptions = {}): Swarm {
  return new Swarm(profiles, config, options);
}

/**
 * A config with one base model, `base`, of `layers` layers in `pipelines` copies.
 * @example createSwarm(profiles, swarmConfig(12, 2))
 */
export function swarmConfig(layers: number, pipelines = 1): SwarmConfig {
  const model: ModelSpec = { id: 'base', layers, pipelines, kind: 'base' };
  return { models: [model] };
}
