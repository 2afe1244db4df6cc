/**
 * The rebalancer plug-in (docs/rebalance.md): `rebalancer(options)` checks its options once and
 * returns what `createSwarm`'s `rebalancer` option takes. Its decision is {@link proposeMoves};
 * the swarm carries the moves out make-before-break.
 */
import { describeValue } from '../core/describe.js';
import { SwarmError } from '../core/errors.js';
import type { RebalancerPlugin, SpanOrder } from '../runtime/rebalance-hook.js';
import { MoveRunner, type LoadReport, type RunnerPolicy } from './move-runner.js';
import { proposeMoves } from './propose-moves.js';
import { rebalanceOptionsIssue, resolveRebalanceOptions, type RebalanceOptions } from './rebalance-options.js';
import { independentMoves } from './independent-moves.js';
import { servingMoves } from './serving-moves.js';

/** The plug-in's options: the decision's, the automatic policy's interval and a loader. */
export interface RebalancerOptions extends RebalanceOptions {
  /**
   * Runs `rebalance()` every `everyMs` ms on the swarm's clock (a clock with timers), when the
   * swarm is healthy and no move is under way: the automatic policy. Each run makes only the moves
   * that pass the hysteresis, so a stable swarm reaches a fixed point and then moves nothing.
   * @defaultValue off: only `swarm.rebalance()` runs it (`REBALANCE_EVERY_MS`, 60 s, is the documented interval to choose)
   */
  readonly everyMs?: number;
  /**
   * Loads one span on its node and resolves once it is held (an agent through the engine seam),
   * optionally with how long reading it took (`{ seconds }`, measured): that node's later loads are
   * priced at the bandwidth measured. @defaultValue the modelled time on the swarm's clock
   */
  readonly load?: (span: SpanOrder) => Promise<void | LoadReport>;
}

/** The documented interval of the automatic policy, in ms: one minute. */
export const REBALANCE_EVERY_MS = 60_000;

/**
 * The rebalancer as a plug-in for `createSwarm`: `swarm.rebalance(options?)` then moves spans to
 * where counted-once throughput needs them, and `everyMs` runs it on an interval.
 * @throws {SwarmError} `InvalidInput` naming the bad option
 * @example createSwarm(profiles, config, { rebalancer: rebalancer({ everyMs: REBALANCE_EVERY_MS }) })
 */
export function rebalancer(options: RebalancerOptions = {}): RebalancerPlugin {
  if (options === null || typeof options !== 'object') throw new SwarmError('InvalidInput', `rebalancer options must be an object, got ${describeValue(options)}`);
  const { everyMs, load, ...decision } = options;
  if (everyMs !== undefined && !(Number.isInteger(everyMs) && everyMs >= 1 && everyMs <= 86_400_000)) throw new SwarmError('InvalidInput', `rebalancer option "everyMs" must be an integer of ms in [1, 86400000], got ${describeValue(everyMs)}`);
  if (load !== undefined && typeof load !== 'function') throw new SwarmError('InvalidInput', `rebalancer option "load" must be a function (span) => Promise<void>, got ${describeValue(load)}`);
  const issue = rebalanceOptionsIssue(decision);
  if (issue !== undefined) throw new SwarmError('InvalidInput', issue);
  const policy: RunnerPolicy = {
    decide: (plan, profiles, nodes, call) => {
      const callIssue = rebalanceOptionsIssue(call);
      if (callIssue !== undefined) throw new SwarmError('InvalidInput', callIssue);
      const merged = { ...decision, ...(call as RebalanceOptions | undefined) };
      const proposal = proposeMoves(plan, profiles, nodes, merged);
      // Carried out at once over the plan as it is: chains of moves become one move each.
      const independent = independentMoves(plan, proposal.moves, profiles, resolveRebalanceOptions(merged));
      // And every model keeps a serving copy while they load (serving-moves.ts).
      const { moves, after } = servingMoves(plan, independent, profiles);
      return { ...proposal, moves, layersMoved: moves.reduce((n, m) => n + m.layersMoved, 0), ...(Number.isNaN(after) ? {} : { after }) };
    },
    loadGbPerSecond: resolveRebalanceOptions(decision).loadGbPerSecond,
    ...(everyMs !== undefined ? { everyMs } : {}),
    ...(load !== undefined ? { load } : {}),
  };
  return Object.freeze({ kind: 'rebalancer' as const, attach: (host: Parameters<RebalancerPlugin['attach']>[0]) => new MoveRunner(host, policy) });
}
