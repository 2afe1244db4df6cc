/**
 * W7's policies beside the field's routers: the oracle reference (our rule with exact caches). The
 * field's routers are frozen in prefix-baselines.ts and re-exported here.
 */
import { PREFIX_CACHE_DEFAULTS } from '../../prefix/prefix-cache-options.js';
import { BaseRouter } from './prefix-baselines.js';
import type { PrefixPolicy } from './prefix-router.js';
import type { PromptRequest } from './prefix-workloads.js';
import type { SimPipeline } from './load-topology.js';

export { roundRobin, prefixOnly, sglangCacheAware, SGLANG_DEFAULTS, gieScorers, GIE_DEFAULTS, dynamoCost, DYNAMO_OVERLAP_WEIGHT } from './prefix-baselines.js';

/** The oracle's rule: ours' defaults (`PREFIX_CACHE_DEFAULTS`): affinity threshold, guard (two conditions, in-flight requests). */
export const ORACLE_RULE = Object.freeze({ threshold: PREFIX_CACHE_DEFAULTS.cacheThreshold, abs: PREFIX_CACHE_DEFAULTS.balanceAbs, rel: PREFIX_CACHE_DEFAULTS.balanceRel });

/**
 * The oracle (a reference): our rule with every cache known exactly, and what is on its way into
 * it (prompts queued or in prefill at a node). When a copy's first node holds at least
 * {@link ORACLE_RULE}'s `threshold` of the prompt, the copy holding the most (ties to the least
 * loaded); else the copy that has prefilled the fewest uncached blocks (W7's copies have equal
 * caches; ties to the least loaded); unless that copy holds more than `abs` more requests in
 * flight than the least loaded copy and more than `rel` times as many: then the least loaded.
 */
export const oracleCache: PrefixPolicy = {
  id: 'oracle-cache',
  label: 'oracle: our rule with exact caches (reference only)',
  oracle: true,
  create: (context) =>
    new (class extends BaseRouter {
      private readonly filled = this.copies.map(() => 0);
      protected choose(request: PromptRequest): number {
        const load = (c: number) => this.outstanding[c] ?? 0;
        const held = (c: number) => context.truth.comingBlocks(((this.copies[c] as SimPipeline).stages[0] as { node: number }).node, request.blocks);
        const best = this.argmax((c) => held(c) * 1e6 - load(c));
        const least = this.argmax((c) => -load(c));
        const total = request.blocks.length;
        const pick = total > 0 && held(best) >= ORACLE_RULE.threshold * total ? best : this.argmax((c) => -(this.filled[c] ?? 0) * 1e6 - load(c));
        const guard = load(pick) - load(least) > ORACLE_RULE.abs && load(pick) > ORACLE_RULE.rel * load(least);
        const i = guard ? least : pick;
        this.filled[i] = (this.filled[i] ?? 0) + total - held(i);
        return i;
      }
    })(context),
};
