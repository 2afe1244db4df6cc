/**
 * The checks `createSwarm` makes on its config and options before anything is built, as pure
 * functions: each returns the first problem as a message naming the field, or undefined.
 */

import { admissionConfigIssue } from './admission-config.js';
import { describeValue } from './describe.js';
import { ejectionOptionsIssue, type EjectionOptions } from './ejection.js';
import { phiOptionsIssue, type PhiOptions } from './phi.js';
import { TELEMETRY_LIMITS } from './telemetry-limits.js';

const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** What is wrong with a swarm config (`{ models, alpha?, leaseTtlMs?, … }`), or undefined. */
export function swarmConfigIssue(config: unknown): string | undefined {
  if (config === null || typeof config !== 'object') return 'config must be an object { models, ... }';
  const c = config as Record<string, unknown>;
  // Bad models are left to planSwarm, so they are the same PlanError from both entry points.
  const { alpha, leaseTtlMs, releaseSampleMs, failurePenaltyMs, allowDegraded } = c;
  if (alpha !== undefined && !(isNumber(alpha) && alpha > 0 && alpha <= 1)) return `config "alpha" must be in (0, 1], got ${String(alpha)}`;
  if (leaseTtlMs !== undefined && !(typeof leaseTtlMs === 'number' && leaseTtlMs > 0)) return `config "leaseTtlMs" must be a number > 0, got ${String(leaseTtlMs)}`;
  if (releaseSampleMs !== undefined && !(isNumber(releaseSampleMs) && releaseSampleMs >= 0)) return `config "releaseSampleMs" must be a finite number >= 0, got ${String(releaseSampleMs)}`;
  // It is fed as a latency sample: within the bound a sample has (docs/inputs.md).
  if (failurePenaltyMs !== undefined && !(isNumber(failurePenaltyMs) && failurePenaltyMs >= 0 && failurePenaltyMs <= TELEMETRY_LIMITS.latencyMs)) {
    return `config "failurePenaltyMs" must be a number from 0 to ${TELEMETRY_LIMITS.latencyMs}, got ${String(failurePenaltyMs)}`;
  }
  if (allowDegraded !== undefined && typeof allowDegraded !== 'boolean') return `config "allowDegraded" must be a boolean`;
  const detection = phiOptionsIssue(c['failureDetector'] as PhiOptions | undefined) ?? ejectionOptionsIssue(c['ejection'] as EjectionOptions | undefined);
  if (detection !== undefined) return `config ${detection}`;
  if (c['prefixCache'] !== undefined) return 'config "prefixCache" is an option now: createSwarm(profiles, config, { prefixCache: prefixCache(options) }), prefixCache from hecate-swarm/prefix';
  return admissionConfigIssue(c['admission']);
}

/** What is wrong with `createSwarm`'s options (`{ inspect?, seed?, idSource?, clock? }`), or undefined. */
export function swarmOptionsIssue(options: unknown): string | undefined {
  if (options === null || typeof options !== 'object') return 'options must be an object { inspect?, seed?, idSource?, clock? }';
  const { clock, idSource, seed, inspect, restore, leaseNamespace } = options as Record<string, unknown>;
  if (leaseNamespace !== undefined && !(typeof leaseNamespace === 'string' && leaseNamespace.length <= 64)) return `option "leaseNamespace" must be a string of at most 64 characters, got ${describeValue(leaseNamespace)}`;
  if (restore !== undefined) return 'option "restore" is not a createSwarm option: restore a persisted swarm with restoreSwarm (docs/persistence.md)';
  const plugin = (options as { prefixCache?: unknown }).prefixCache;
  if (plugin !== undefined && (plugin === null || typeof plugin !== 'object' || (plugin as { kind?: unknown }).kind !== 'prefixCache' || typeof (plugin as { attach?: unknown }).attach !== 'function')) {
    return `option "prefixCache" must be what prefixCache(options) of hecate-swarm/prefix returns, got ${describeValue(plugin)}`;
  }
  const rebalancer = (options as { rebalancer?: unknown }).rebalancer;
  if (rebalancer !== undefined && (rebalancer === null || typeof rebalancer !== 'object' || (rebalancer as { kind?: unknown }).kind !== 'rebalancer' || typeof (rebalancer as { attach?: unknown }).attach !== 'function')) {
    return `option "rebalancer" must be what rebalancer(options) of hecate-swarm/rebalance returns, got ${describeValue(rebalancer)}`;
  }
  if ('propose' in options) return 'option "propose" is not a createSwarm option: a replica of hecate-swarm/replication defers its node actors\' own marks itself (docs/replication.md)';
  if (clock !== undefined && typeof (clock as { now?: unknown } | null)?.now !== 'function') return 'option "clock" must have a now() method returning milliseconds';
  if (clock !== undefined) {
    const { setTimeout, clearTimeout } = clock as { setTimeout?: unknown; clearTimeout?: unknown };
    if ((setTimeout !== undefined || clearTimeout !== undefined) && !(typeof setTimeout === 'function' && typeof clearTimeout === 'function')) {
      return 'option "clock" must have both setTimeout(fn, ms) and clearTimeout(handle) methods, or neither';
    }
  }
  if (idSource !== undefined && typeof idSource !== 'function') return 'option "idSource" must be a function returning a new id';
  if (seed !== undefined && !Number.isInteger(seed)) return `option "seed" must be an integer, got ${String(seed)}`;
  if (inspect !== undefined && typeof inspect !== 'function' && (inspect === null || typeof inspect !== 'object')) return 'option "inspect" must be an XState inspection observer (a function or { next })';
  return undefined;
}
