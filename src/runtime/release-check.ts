/**
 * The checks `swarm.release` makes before it changes anything (docs/inputs.md): the lease is open,
 * the outcome is well formed, and a failed node it names is one of the lease's nodes.
 */
import { checkReleaseOutcome, type CheckedOutcome } from '../core/arguments.js';
import { SwarmError } from '../core/errors.js';
import type { Lease } from './types.js';
import type { LeaseTable } from './lease-table.js';

/**
 * The lease's id and its checked outcome.
 * @throws {SwarmError} `UnknownLease`, `BadTelemetry`
 */
export function checkRelease(leases: LeaseTable, ttlMs: number, lease: Lease | string, outcome: unknown, isMember: (nodeId: string) => boolean): CheckedOutcome & { readonly id: string } {
  const id: unknown = typeof lease === 'string' ? lease : lease !== null && typeof lease === 'object' ? lease.id : undefined;
  if (!leases.isOpen(id)) throw new SwarmError('UnknownLease', `unknown lease "${String(id)}": never issued, already released, or expired after ${ttlMs} ms`);
  const checked = checkReleaseOutcome(outcome, id); // each field read once
  const nodes = leases.held(id) ?? [];
  // A failed (or busy) node that has left the swarm since (removeNode drops it from every lease) is
  // no error: there is nothing left to charge. A member the lease does not hold is a wrong name.
  for (const [key, node] of [['failedNode', checked.failedNode], ['busyNode', checked.busyNode]]) {
    if (node !== undefined && !nodes.includes(node) && isMember(node)) throw new SwarmError('BadTelemetry', `release of lease "${String(id)}": "${key}" must be one of the lease's nodes (${nodes.join(', ')}), got ${String(node)}`);
  }
  return { ...checked, id: id as string };
}
