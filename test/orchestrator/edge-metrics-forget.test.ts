/**
 * Metrics that forget, on a real serve: a member that joins, is called, and never heartbeats is
 * forgotten, and its per-node series (`hecate_stage_calls_total{node}`) leave `/metrics` with it,
 * so ids an attacker invents do not pile up there.
 */
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopAll, waitFor } from './processes.js';
import { member, postJson, removeServeDirs, startServe } from './edge-helpers.js';

/** Where the ghost says it listens: every connection is closed at once, so its stage calls fail. */
let closer: Server;
let port = 0;

beforeAll(async () => {
  closer = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => closer.listen(0, '127.0.0.1', resolve));
  port = (closer.address() as { port: number }).port;
});

afterAll(async () => {
  await stopAll();
  removeServeDirs();
  await new Promise((resolve) => closer.close(resolve));
});

const metricsText = async (url: string): Promise<string> => (await fetch(`${url}/metrics`)).text();

describe('a forgotten member', () => {
  it('takes its hecate_stage_calls_total series with it', async () => {
    const serve = await startServe('serve forget', ['--layers', '4', '--pipelines', '1', '--forget-after-ms', '2000', '--eject-after', '100']);
    const joined = await postJson(`${serve.url}/v1/nodes`, { id: 'ghost', memoryGb: 8, score: 1, url: `http://127.0.0.1:${port}` }, member(serve, 'ghost'));
    expect(joined.status).toBe(200);
    // The swarm is planned over it; its stage calls fail (its connections are closed).
    await waitFor('a call counted against ghost', async () => {
      await postJson(`${serve.url}/v1/generate`, { model: 'base', prompt: 'hi', steps: 1 });
      return /hecate_stage_calls_total\{node="ghost"/.test(await metricsText(serve.url)) ? true : undefined;
    }, 10_000, 100);
    // It never heartbeats: forgotten after 2 s, and its series with it.
    await waitFor('ghost forgotten', async () => (/hecate_nodes_forgotten_total 1/.test(await metricsText(serve.url)) ? true : undefined), 10_000, 100);
    const after = await metricsText(serve.url);
    expect(after).not.toContain('node="ghost"');
    expect(after).toContain('hecate_stage_calls_total');
  }, 30_000);
});
