/**
 * The agent's drop (`POST /v1/sessions/drop`): signed with the swarm secret like a stage call; it
 * aborts the session's running call (its slot goes to the next), frees its caches, and a late call
 * of it is refused; a caller that hangs up frees its call's slot too. On the agent's injected clock.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/runtime/clock.js';
import { startAgent, type RunningAgent } from '../../src/agent/agent.js';
import { loadAgentKey } from '../../src/wire/agent-key.js';
import { signedHeaders } from '../../src/wire/signed-headers.js';
import { agentAudience } from '../../src/wire/request-signing.js';
import { AGENT_MAX_AHEAD_MS } from '../../src/agent/stage-guard.js';
import { SessionDrops } from '../../src/agent/session-drops.js';
import type { StageEngine } from '../../src/agent/stage-engine.js';
import { postStage, type DigestCall } from './stage-messages.js';
import { freePort } from '../replication/nats-server.js';
import { waitFor } from '../orchestrator/processes.js';

const secret = new TextEncoder().encode('drop-test-secret');
let agent: RunningAgent | undefined;
afterEach(async () => {
  await agent?.stop();
  agent = undefined;
});

const signedStage = (url: string, call: DigestCall, signal?: AbortSignal) => postStage(url, call, secret, signal);
const signedPost = (url: string, body: unknown, signal?: AbortSignal): Promise<Response> => {
  const text = JSON.stringify(body);
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...signedHeaders({ secret }, 'POST', url, text, Date.now(), agentAudience('d1')) }, body: text, ...(signal !== undefined ? { signal } : {}) });
};
const stage = (sessionId: string, fresh = true): DigestCall => ({ sessionId, modelId: 'base', layerStart: 0, layerEnd: 5, step: 0, fresh, tokens: 1, input: 7, replay: [] });
type Health = { sessions: number; running: number; queued: number; calls: number; drops: number };

async function started(clock: ManualClock): Promise<{ url: string; health: () => Promise<Health> }> {
  const { key } = loadAgentKey(join(mkdtempSync(join(tmpdir(), 'hecate-drops-')), 'key.json'), 'd1');
  agent = await startAgent({ id: 'd1', memoryGb: 4, score: 1, join: `http://127.0.0.1:${await freePort()}`, perLayerMs: 10, jitter: 0, slots: 1, clock, auth: { secret, key } });
  const url = agent.url;
  await new Promise((resolve) => setTimeout(resolve, AGENT_MAX_AHEAD_MS)); // it takes calls from then (stage-guard.ts)
  return { url, health: async () => (await fetch(`${url}/v1/health`)).json() as Promise<Health> };
}

describe('POST /v1/sessions/drop on the agent', () => {
  it('refuses an unsigned drop (401); a signed one frees the caches of a finished session', async () => {
    const clock = new ManualClock(0);
    const { url, health } = await started(clock);
    const done = signedStage(`${url}/v1/stage`, stage('s1'));
    await waitFor('the call runs', async () => ((await health()).calls === 1 ? true : undefined), 5000, 5);
    clock.advance(50);
    expect((await done).status).toBe(200);
    expect((await health()).sessions).toBe(1);
    const unsigned = await fetch(`${url}/v1/sessions/drop`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sessionId: 's1' }) });
    expect(unsigned.status).toBe(401);
    expect((await health()).sessions).toBe(1);
    const dropped = await signedPost(`${url}/v1/sessions/drop`, { sessionId: 's1' });
    expect(await dropped.json()).toEqual({ nodeId: 'd1', sessionId: 's1', held: true });
    expect(await health()).toMatchObject({ sessions: 0, calls: 0, drops: 1 });
    // A late call of the dropped session builds nothing: refused, naming the session.
    const late = await signedStage(`${url}/v1/stage`, stage('s1', true)); // a first call that arrives after its drop
    expect(late.status).toBe(409);
    expect(late.body.error.message).toMatch(/dropped session "s1"/);
    const bad = await signedPost(`${url}/v1/sessions/drop`, { session: 's1' });
    expect(bad.status).toBe(400);
  });

  it('aborts a running call of the dropped session and hands its slot on; a hung-up caller frees its slot', async () => {
    const clock = new ManualClock(0);
    const { url, health } = await started(clock);
    const running = signedStage(`${url}/v1/stage`, stage('a'));
    await waitFor('a runs', async () => ((await health()).running === 1 ? true : undefined), 5000, 5);
    const waiting = signedStage(`${url}/v1/stage`, stage('b'));
    await waitFor('b waits for the slot', async () => ((await health()).queued === 1 ? true : undefined), 5000, 5);
    await signedPost(`${url}/v1/sessions/drop`, { sessionId: 'a' });
    expect((await running).status).toBe(409);
    await waitFor('b took the slot', async () => ((await health()).queued === 0 ? true : undefined), 5000, 5);
    clock.advance(50);
    expect((await waiting).status).toBe(200);
    expect(await health()).toMatchObject({ sessions: 1, running: 0, calls: 0 });

    const caller = new AbortController();
    const hungUp = signedStage(`${url}/v1/stage`, stage('c'), caller.signal).catch(() => 'hung up');
    await waitFor('c runs', async () => ((await health()).running === 1 ? true : undefined), 5000, 5);
    caller.abort();
    expect(await hungUp).toBe('hung up');
    await waitFor('c gave its slot back', async () => ((await health()).running === 0 ? true : undefined), 5000, 5);
    expect(await health()).toMatchObject({ sessions: 1, calls: 0 }); // c built no caches
  });

  it('a span\'s load is every waiting call\'s: its first caller hanging up fails no other (a stage call\'s load gets no signal)', async () => {
    // An engine that loads a span once, shared by every call waiting for it, honouring the signal it is given (as the reference engine does).
    let release = (): void => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const given: (AbortSignal | undefined)[] = [];
    let loading: Promise<void> | undefined;
    const engine: StageEngine = {
      kind: 'shared-load',
      load(_span, signal) {
        given.push(signal);
        loading ??= gate.then(() => {
          if (signal?.aborted === true) throw new Error('loading was aborted');
        });
        return loading;
      },
      step: async (call) => call.input,
      rebuild: async (_s, _span, inputs) => inputs,
      drop: () => false,
      holds: () => ({ sessions: 0, cachedTokens: 0, memoryBytes: 0, spans: [] }),
    };
    const { key } = loadAgentKey(join(mkdtempSync(join(tmpdir(), 'hecate-drops-')), 'key.json'), 'd1');
    agent = await startAgent({ id: 'd1', memoryGb: 4, score: 1, join: `http://127.0.0.1:${await freePort()}`, engine, auth: { secret, key } });
    const url = agent.url;
    await new Promise((resolve) => setTimeout(resolve, AGENT_MAX_AHEAD_MS));
    const first = new AbortController();
    const hungUp = signedStage(`${url}/v1/stage`, stage('x'), first.signal).catch(() => 'hung up');
    const other = signedStage(`${url}/v1/stage`, stage('y'));
    await waitFor('both wait for the load', async () => (given.length === 2 ? true : undefined), 5000, 5);
    first.abort();
    expect(await hungUp).toBe('hung up');
    await new Promise((resolve) => setTimeout(resolve, 50)); // the hang-up reached the agent
    release();
    expect((await other).status).toBe(200);
    expect(given).toEqual([undefined, undefined]);
  });
});

describe('SessionDrops', () => {
  it('remembers a dropped id for its memory only, and at most its bound of ids', () => {
    const clock = new ManualClock(0);
    const drops = new SessionDrops(clock, 1000, 2);
    drops.drop('x');
    expect(() => drops.begin('x', 'n1')).toThrow(/agent "n1" dropped session "x"/);
    clock.advance(1000);
    expect(() => drops.end('x', drops.begin('x', 'n1'))).not.toThrow();
    drops.drop('p');
    drops.drop('q');
    drops.drop('r'); // past the bound: p forgotten first
    expect(() => drops.begin('p', 'n1')).not.toThrow();
    expect(() => drops.begin('r', 'n1')).toThrow();
  });
});
