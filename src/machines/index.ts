/**
 * `hecate-swarm/machines` — internal: the statecharts and their context types, for inspection,
 * charts, model-based tests and tools that drive the machines with XState directly. Their shapes
 * may change in any minor version, as the runtime is tuned; the root entry's API does not
 * depend on them (docs/machine.md).
 * @packageDocumentation
 * @internal
 */
export { nodeMachine, isNodeAlive } from '../../machines/node.machine.js';
export type { NodeContext, NodeEvent, NodeHealth, NodeInput, NodeSample, NodeSettings, NodeReport } from '../../machines/node.machine.js';
export { swarmMachine, provideSwarm, nodeKey, nodeActorOf, computeRescue, liveStatus, isMember, isAliveIn, aliveMembers } from '../../machines/swarm.machine.js';
export type {
  SwarmContext,
  SwarmEvent,
  SwarmInput,
  SwarmOutcome,
  SwarmImplementations,
  SwarmReaders,
  RescueIndex,
  RescueReads,
  PendingRescue,
  NodeActorRef,
  Member,
  OwnMark,
  SwarmRestore,
} from '../../machines/swarm.machine.js';
