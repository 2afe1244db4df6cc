/**
 * The orchestrator's loader for `serve --rebalance` (docs/rebalance.md "Replicas, serve and
 * agents"): each span a move loads goes to its agent as `POST /v1/spans/load`, signed like a stage
 * call; the agent's engine loads it (the stand-in takes the modelled time, the reference engine
 * reads the weights) and its measured time prices that node's later loads. A load that fails (an
 * agent unknown, unreachable, refusing) rejects, which aborts its move: the old copy serves on.
 */
import { agentAudience } from '../wire/request-signing.js';
import type { ModelSpec } from '../core/types.js';
import type { PeerPost } from '../net/peer-post.js';
import type { LoadReport } from '../rebalance/move-runner.js';
import type { SpanOrder } from '../runtime/rebalance-hook.js';
import type { Clock } from '../runtime/types.js';
import { LOAD_PATH, type LoadReply, type LoadRequest } from '../wire/load-protocol.js';
import type { NodeRegistry } from './node-registry.js';

/** The least time a load is given before it is given up (a slow disk, a busy agent): 60 s, or three times the modelled time. */
export const LOAD_TIMEOUT_MS = 60_000;

/** A loader for `rebalancer({ load })` that asks each span's agent. */
export function agentLoads(registry: NodeRegistry, post: PeerPost, models: readonly ModelSpec[], clock: Clock): (span: SpanOrder) => Promise<LoadReport> {
  const layersOf = new Map(models.map((m) => [m.id, m.layers] as const));
  return async (span) => {
    const url = registry.get(span.nodeId)?.url;
    if (url === undefined) throw new Error(`agent "${span.nodeId}" has no address here`);
    const body: LoadRequest = { modelId: span.modelId, layerStart: span.layerStart, layerEnd: span.layerEnd, layers: layersOf.get(span.modelId) ?? span.layerEnd, seconds: span.seconds };
    const budget = new AbortController();
    const timer = clock.setTimeout(() => budget.abort(), Math.max(LOAD_TIMEOUT_MS, 3000 * span.seconds));
    try {
      const reply = await post(`${url}${LOAD_PATH}`, JSON.stringify(body), budget.signal, 'POST', 'application/json', agentAudience(span.nodeId));
      if (!reply.ok) throw new Error(`agent "${span.nodeId}" refused to load ${span.modelId} [${span.layerStart}, ${span.layerEnd}): HTTP ${reply.status} ${(await reply.text()).slice(0, 200)}`);
      const answer = (await reply.json()) as Partial<LoadReply>;
      return typeof answer.ms === 'number' && Number.isFinite(answer.ms) && answer.ms > 0 ? { seconds: answer.ms / 1000 } : {};
    } finally {
      clock.clearTimeout(timer);
    }
  };
}
