/**
 * Builds a Swarm's {@link Admission} over its parts and has it follow the statechart: a node that
 * revives or joins wakes the queue, a node that leaves takes its slots along (docs/admission.md).
 */
import type { Actor } from 'xstate';
import type { provideSwarm } from '../../machines/swarm.machine.js';
import type { AdmissionConfig } from '../core/admission-config.js';
import type { Route } from '../core/types.js';
import { Admission } from './admission.js';

export type { Admission } from './admission.js';
export type { AdmitOptions } from '../core/admission-config.js';
export type { Saturation } from './saturation.js';
import type { LeaseTable } from './lease-table.js';
import type { SwarmView } from './swarm-view.js';
import type { Clock, LeasedRoute, SwarmRequest, TimeSource } from './types.js';

/** What a Swarm hands its admission. */
export interface AdmissionParts {
  readonly actor: Actor<ReturnType<typeof provideSwarm>>;
  readonly view: SwarmView;
  readonly leases: LeaseTable;
  readonly clock: Clock | TimeSource;
  /** `swarm.route(request)`. */
  readonly route: (request: SwarmRequest) => Route;
  /** A lease on `route`, as `route(…, { reserve: true })` takes it. */
  readonly lease: (route: Route, request: SwarmRequest) => LeasedRoute;
}

/** The admission of a Swarm, following its statechart's node events (registered after the view's). */
export function swarmAdmission(parts: AdmissionParts, config: AdmissionConfig | undefined): Admission {
  const { actor, view, leases } = parts;
  const admission = new Admission(
    {
      clock: parts.clock,
      plan: () => actor.getSnapshot().context.plan,
      nodes: () => view.table.nodes,
      profileOf: (id) => actor.getSnapshot().context.members.get(id)?.profile,
      route: parts.route,
      lease: parts.lease,
      expire: () => leases.expire(),
      remote: (id) => view.table.remoteOf(id),
    },
    config,
  );
  actor.on('node.alive', () => admission.wakeSoon());
  view.table.onRemoteFreed = () => admission.wakeSoon(); // another replica released: room here
  actor.on('node.joined', () => admission.wakeSoon());
  actor.on('node.left', (e) => admission.dropNode(e.nodeId));
  return admission;
}
