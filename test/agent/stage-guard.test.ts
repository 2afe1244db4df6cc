/**
 * The agent's signature check (src/agent/stage-guard.ts) in process, on a held clock: a call signed
 * for another agent, stamped before the agent took calls (its restart) or too far ahead, or used
 * once already, is 401 before the route runs; one for this agent inside the window runs. And the
 * membership's side of the audience (src/agent/membership.ts): it signs for what `GET /v1/audience`
 * answers, and asks again when a heartbeat is refused for it.
 */
import { describe, expect, it } from 'vitest';
import { AGENT_MAX_AHEAD_MS, guardStageCalls } from '../../src/agent/stage-guard.js';
import { startMembership } from '../../src/agent/membership.js';
import { createHttpApp } from '../../src/net/http-app.js';
import type { PeerPost, PeerReply } from '../../src/net/peer-post.js';
import { ManualClock } from '../../src/testing/index.js';
import { DROP_PATH } from '../../src/wire/drop-protocol.js';
import { agentAudience } from '../../src/wire/request-signing.js';
import { signedHeaders } from '../../src/wire/signed-headers.js';

const secret = new Uint8Array(32).fill(9);

function guarded() {
  const clock = new ManualClock(1_000_000);
  const app = createHttpApp();
  const { notBefore } = guardStageCalls(app, secret, 'a1', clock);
  let ran = 0;
  app.post(DROP_PATH, async () => ({ ran: ++ran }));
  const drop = (audience: string, stampedAt: number, headers?: Record<string, string>) => {
    const body = JSON.stringify({ sessionId: 's' });
    const sent = headers ?? signedHeaders({ secret }, 'POST', `http://127.0.0.1${DROP_PATH}`, body, stampedAt, audience);
    return { sent, answer: app.inject({ method: 'POST', url: DROP_PATH, headers: { 'content-type': 'application/json', ...sent }, payload: body }) };
  };
  return { clock, app, notBefore, drop, ran: () => ran };
}

describe('guardStageCalls', () => {
  it('takes calls for this agent from its start + AGENT_MAX_AHEAD_MS, once each', async () => {
    const { clock, notBefore, drop, ran, app } = guarded();
    expect(notBefore).toBe(1_000_000 + AGENT_MAX_AHEAD_MS);
    clock.advance(AGENT_MAX_AHEAD_MS + 10);
    const first = drop(agentAudience('a1'), clock.now());
    expect((await first.answer).statusCode).toBe(200);
    const again = await drop(agentAudience('a1'), 0, first.sent).answer;
    expect(again.statusCode).toBe(401);
    expect(again.json().error.message).toContain('already used');
    expect(ran()).toBe(1);
    await app.close();
  });

  it('refuses, before the route runs, a call for another agent, from before its start, or too far ahead', async () => {
    const { clock, drop, ran, app } = guarded();
    clock.advance(5_000);
    const other = await drop(agentAudience('a2'), clock.now()).answer;
    expect(other.statusCode).toBe(401);
    expect(other.json().error).toMatchObject({ code: 'Unauthenticated', field: 'headers', message: expect.stringContaining('signed for "agent/a2", not for this receiver ("agent/a1")') });
    const early = await drop(agentAudience('a1'), 1_000_000 + AGENT_MAX_AHEAD_MS - 1).answer; // taken, maybe, by the process before
    expect(early.statusCode).toBe(401);
    expect(early.json().error.message).toContain('before this receiver takes requests');
    const ahead = await drop(agentAudience('a1'), clock.now() + AGENT_MAX_AHEAD_MS + 1).answer;
    expect(ahead.statusCode).toBe(401);
    expect(ahead.json().error.message).toContain(`ahead of this host's clock (at most ${AGENT_MAX_AHEAD_MS} ms)`);
    clock.advance(35_000);
    expect((await drop(agentAudience('a1'), clock.now() - 29_000).answer).statusCode).toBe(200); // up to 30 s behind is fine
    expect(ran()).toBe(1);
    await app.close();
  });
});

describe('startMembership with a signing poster', () => {
  it('signs for the audience the orchestrator names, and asks again when a heartbeat is refused for it', async () => {
    const clock = new ManualClock(0);
    let audience = 'orchestrator/first';
    const sent: { path: string; audience: string | null | undefined }[] = [];
    const reply = (status: number, body: unknown): PeerReply => ({ status, ok: status < 300, text: async () => JSON.stringify(body), json: async () => body, arrayBuffer: async () => new ArrayBuffer(0) });
    const post: PeerPost = async (url, _body, _signal, method = 'POST', _type, signedFor) => {
      const path = new URL(url).pathname;
      sent.push({ path: `${method} ${path}`, audience: signedFor });
      if (path === '/v1/audience') return reply(200, { audience, signing: 2 });
      if (signedFor !== audience) return reply(401, { error: { code: 'Unauthenticated', message: 'another receiver', field: 'x-hecate-audience' } });
      return reply(200, { models: [{ id: 'base', layers: 4 }] });
    };
    const membership = startMembership({ bases: ['http://o:1'], profile: { id: 'a1', memoryGb: 4, url: 'http://a:2' }, heartbeatMs: 1000, post, signed: true, clock, log: () => {} });
    await membership.joined;
    audience = 'orchestrator/second'; // it restarted
    clock.advance(1000);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(sent.filter((s) => s.path === 'POST /v1/nodes').map((s) => s.audience)).toEqual(['orchestrator/first', 'orchestrator/second']);
    expect(sent.filter((s) => s.path === 'GET /v1/audience').map((s) => s.audience)).toEqual([null, null]);
    await membership.leave();
    expect(sent.at(-1)).toEqual({ path: 'POST /v1/nodes/a1/leave', audience: 'orchestrator/second' });
  });
});
