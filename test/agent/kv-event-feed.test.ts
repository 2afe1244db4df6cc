/**
 * The engine's KV block feed (src/agent/kv-event-feed.ts): blocks shared by sequences are stored
 * once and removed with their last holder, deepest first; a snapshot lists each block after its
 * parent; past the buffer's bound the oldest events go and the numbers show the gap.
 */
import { describe, expect, it } from 'vitest';
import { KvEventFeed } from '../../src/agent/kv-event-feed.js';
import { kvReportIssue } from '../../src/prefix/kv-feed.js';
import { startKvReports } from '../../src/agent/kv-reporter.js';
import type { PeerPost } from '../../src/net/peer-post.js';
import { ManualClock } from '../../src/runtime/clock.js';

const ids = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => from + i);

describe('KvEventFeed', () => {
  it('stores a shared block once, removes it with its last holder, and its events check as a report', () => {
    const feed = new KvEventFeed(4, 100, 'e');
    const a: string[] = [];
    const b: string[] = [];
    feed.hold('m', ids(10), a); // 2 whole blocks
    feed.hold('m', [...ids(8), 50, 51, 52, 53], b); // shares both, adds a third
    expect([a.length, b.length, a[1] === b[1]]).toEqual([2, 3, true]);
    feed.release('m', a);
    const report = feed.take();
    expect(kvReportIssue(report)).toBeUndefined();
    expect(report.events.map((e) => [e.seq, e.kind, e.kind === 'stored' ? e.blocks.length : 0])).toEqual([[1, 'stored', 2], [2, 'stored', 1]]);
    const [b0, b1, b2] = b;
    feed.release('m', b, 1); // keeps the first block
    expect(b).toEqual([b0]);
    expect(feed.take().events).toEqual([{ seq: 3, kind: 'removed', model: 'm', hashes: [b2, b1] }]);
    const snap = feed.snapshot();
    expect(snap.seq).toBe(3);
    expect(snap.stored[0]!.blocks).toEqual([{ hash: b[0], tokens: [0, 1, 2, 3] }]);
  });

  it('drops the oldest events past its bound: the sequence numbers show the gap', () => {
    const feed = new KvEventFeed(2, 2, 'e');
    for (let i = 0; i < 5; i++) feed.hold('m', ids(2, 100 * i), []);
    expect(feed.take().events.map((e) => e.seq)).toEqual([4, 5]);
    feed.hold('m', ids(2, 900), []);
    const withSnapshot = feed.take(true);
    expect(withSnapshot.events.map((e) => e.seq)).toEqual([6]);
    expect(withSnapshot.snapshot!.seq).toBe(6);
    expect(withSnapshot.snapshot!.stored[0]!.blocks).toHaveLength(6);
  });

  it('reports signed for the orchestrator\'s audience, and holds its events while the audience is not learnt', async () => {
    const feed = new KvEventFeed(2, 100, 'e');
    const clock = new ManualClock(0);
    const sent: { url: string; audience: string | null | undefined; events: number }[] = [];
    // As a signed poster does: a request without an audience is refused (signing protocol 2).
    const post: PeerPost = async (url, body, _signal, _method, _contentType, audience) => {
      if (audience === undefined) throw new Error('a signed request needs its receiver\'s audience');
      sent.push({ url, audience, events: (JSON.parse(body as string) as { events: unknown[] }).events.length });
      return { status: 200, ok: true, text: async () => '{}', json: async () => ({}), arrayBuffer: async () => new ArrayBuffer(0) };
    };
    let audience: string | undefined;
    const logged: string[] = [];
    const reports = startKvReports({ id: 'a 1', feed, post, orchestrator: () => 'http://o', audience: () => audience, clock, log: (line) => logged.push(line), everyMs: 100 });
    feed.hold('m', ids(4), []);
    clock.advance(100);
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toEqual([]); // not learnt yet: the events stay in the feed
    audience = 'orchestrator-audience';
    clock.advance(100);
    await new Promise((resolve) => setImmediate(resolve));
    reports.stop();
    expect(sent).toEqual([{ url: 'http://o/v1/nodes/a%201/kv', audience: 'orchestrator-audience', events: 1 }]);
    expect(logged).toEqual([]);
  });
});
