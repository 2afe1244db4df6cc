/**
 * The orchestrator's half of cancellation (docs/serve.md, "Cancellation"): the session-close hook
 * (`dropSession`, docs/sessions.md) of a generation, which tells each agent a stage call of the
 * session went to that the session is over. Sent at once, not awaited by the request, signed like
 * a stage call; each drop is bounded in time and counted in `hecate_session_drops_total`.
 */
import { agentAudience } from '../wire/request-signing.js';
import type { Clock } from '../runtime/types.js';
import { DROP_PATH, type DropRequest } from '../wire/drop-protocol.js';
import type { NodeRegistry } from './node-registry.js';
import type { PeerPost } from '../net/peer-post.js';
import type { ServeMetrics } from './serve-metrics.js';

/** The longest a drop waits for its agent's answer. */
export const DROP_TIMEOUT_MS = 2000;

/** Sends the drops of one orchestrator and knows which are still on their way. */
export class AgentDrops {
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly registry: NodeRegistry,
    private readonly post: PeerPost,
    private readonly clock: Clock,
    private readonly metrics: ServeMetrics,
  ) {}

  /** The `dropSession` hook of a generation: the agents see the session id as `sessionNamespace + id`, as in its stage calls. */
  hook(sessionNamespace = ''): (nodeId: string, sessionId: string) => void {
    return (nodeId, sessionId) => this.send(nodeId, `${sessionNamespace}${sessionId}`);
  }

  /** Resolves once every drop sent so far was answered or given up (a drain waits for it). */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  private send(nodeId: string, sessionId: string): void {
    const url = this.registry.get(nodeId)?.url;
    if (url === undefined) return;
    const body: DropRequest = { sessionId };
    const budget = new AbortController();
    const timer = this.clock.setTimeout(() => budget.abort(), DROP_TIMEOUT_MS);
    const sent: Promise<void> = this.post(`${url}${DROP_PATH}`, JSON.stringify(body), budget.signal, 'POST', 'application/json', agentAudience(nodeId))
      .then(async (response) => {
        await response.arrayBuffer();
        this.metrics.drops.inc({ outcome: response.ok ? 'ok' : 'refused' });
      })
      .catch(() => this.metrics.drops.inc({ outcome: 'unreachable' }))
      .finally(() => {
        this.clock.clearTimeout(timer);
        this.pending.delete(sent);
      });
    this.pending.add(sent);
  }
}
