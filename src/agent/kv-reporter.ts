/**
 * The agent's side of precise mode (docs/prefix-cache.md, "Precise mode"): every `everyMs` it
 * takes its engine's KV events ({@link KvEventFeed}) and posts them, signed as its heartbeats, to
 * `POST /v1/nodes/:id/kv` of the orchestrator it talks to; with nothing to say, once every
 * `keepaliveMs`, so an orchestrator that never heard it asks for a snapshot. The answer
 * `{ snapshot: true }` makes the next report carry the whole block set. A report that fails is
 * lost: the orchestrator sees the gap in the sequence numbers and asks for a snapshot.
 */
import type { PeerPost } from '../net/peer-post.js';
import type { Clock } from '../runtime/types.js';
import { timerDelay } from '../wire/stage-bounds.js';
import type { KvEventFeed } from './kv-event-feed.js';

/** What {@link startKvReports} needs. */
export interface KvReportOptions {
  readonly id: string;
  readonly feed: KvEventFeed;
  readonly post: PeerPost;
  /** The orchestrator's base URL now (membership.ts). */
  readonly orchestrator: () => string;
  /** What the reports are signed for (signing protocol 2: the orchestrator's audience; null unsigned); undefined while not learnt: nothing is sent. */
  readonly audience: () => string | null | undefined;
  readonly clock: Clock;
  /** @defaultValue 100 */
  readonly everyMs?: number;
  /** @defaultValue 1000 */
  readonly keepaliveMs?: number;
  readonly log: (line: string) => void;
}

/** Reports until the returned `stop`. */
export function startKvReports(o: KvReportOptions): { stop(): void } {
  const everyMs = o.everyMs ?? 100;
  const keepaliveMs = o.keepaliveMs ?? 1000;
  let stopped = false;
  let busy = false;
  let wantSnapshot = false;
  let lastSent = -Infinity;
  let timer: unknown;
  const send = async (): Promise<void> => {
    if (busy) return;
    const audience = o.audience();
    if (audience === undefined) return; // not signable yet (a join learning it): the events wait in the feed
    const now = o.clock.now();
    const report = o.feed.take(wantSnapshot);
    if (report.events.length === 0 && report.snapshot === undefined && now - lastSent < keepaliveMs) return;
    busy = true;
    lastSent = now;
    try {
      const response = await o.post(`${o.orchestrator()}/v1/nodes/${encodeURIComponent(o.id)}/kv`, JSON.stringify(report), AbortSignal.timeout(5000), 'POST', 'application/json', audience);
      const answer = (await response.json().catch(() => undefined)) as { snapshot?: unknown } | undefined;
      if (response.ok) wantSnapshot = answer?.snapshot === true;
      else if (response.status !== 404) o.log(`kv report: ${response.status} ${JSON.stringify(answer).slice(0, 300)}`);
    } catch (error) {
      o.log(`kv report: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      busy = false;
    }
  };
  const every = (): void => {
    timer = o.clock.setTimeout(() => {
      if (stopped) return;
      every();
      void send();
    }, timerDelay(everyMs));
  };
  every();
  return {
    stop() {
      stopped = true;
      if (timer !== undefined) o.clock.clearTimeout(timer);
    },
  };
}
