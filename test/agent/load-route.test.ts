/**
 * `POST /v1/spans/load` (docs/rebalance.md "Replicas, serve and agents"): the stand-in engine takes
 * the modelled time for a span it does not hold and none for one it holds; the answer says how long
 * it took; a span outside the model is refused, naming the field; unsigned, it is refused like a
 * stage call. In process (fastify's inject), on a manual clock.
 */
import { describe, expect, it } from 'vitest';
import { DigestEngine } from '../../src/agent/engines/digest-engine.js';
import { registerLoadRoute } from '../../src/agent/load-route.js';
import { guardStageCalls } from '../../src/agent/stage-guard.js';
import { createHttpApp } from '../../src/net/http-app.js';
import { ManualClock } from '../../src/testing/index.js';
import { LOAD_PATH } from '../../src/wire/load-protocol.js';

function agent(withSecret = false) {
  const clock = new ManualClock(1_000);
  const engine = new DigestEngine({ score: 1, perLayerMs: 0, jitter: 0, seed: 7, maxStageMs: 60_000, kvCacheGb: 1, clock });
  const app = createHttpApp();
  if (withSecret) guardStageCalls(app, new Uint8Array(32).fill(7), 'n1', clock);
  const lines: string[] = [];
  registerLoadRoute(app, 'n1', engine, clock, () => new Map([['base', 12]]), (line) => void lines.push(line));
  return { clock, engine, app, lines };
}
const body = (extra: Record<string, unknown> = {}) => ({ modelId: 'base', layerStart: 0, layerEnd: 8, layers: 12, seconds: 4, ...extra });

describe('POST /v1/spans/load', () => {
  it('takes the modelled time for a span the stand-in does not hold, none for one it holds, and says how long it took', async () => {
    const { clock, engine, app, lines } = agent();
    const answer = app.inject({ method: 'POST', url: LOAD_PATH, payload: body() });
    await new Promise((r) => setTimeout(r, 20));
    expect(engine.holds().spans).toEqual([]); // not before its time
    clock.advance(4000);
    const reply = await answer;
    expect(reply.statusCode).toBe(200);
    expect(reply.json()).toEqual({ nodeId: 'n1', ms: 4000 });
    expect(engine.holds().spans).toEqual([{ modelId: 'base', layerStart: 0, layerEnd: 8, layers: 12 }]);
    const again = await app.inject({ method: 'POST', url: LOAD_PATH, payload: body() });
    expect(again.json()).toEqual({ nodeId: 'n1', ms: 0 }); // held: idempotent, at once
    expect(lines).toEqual(['loaded base [0, 8) for a rebalance in 4000 ms', 'loaded base [0, 8) for a rebalance in 0 ms']);
    await app.close();
  });

  it('refuses a span outside the model and a body of the wrong shape, naming the field; unsigned, like a stage call', async () => {
    const { app } = agent();
    const outside = await app.inject({ method: 'POST', url: LOAD_PATH, payload: body({ layerEnd: 13 }) });
    expect(outside.statusCode).toBe(400);
    expect(outside.json()).toMatchObject({ error: { field: 'layerEnd' } });
    const otherModel = await app.inject({ method: 'POST', url: LOAD_PATH, payload: body({ layers: 16 }) });
    expect(otherModel.statusCode).toBe(400);
    expect(otherModel.json()).toMatchObject({ error: { field: 'layers' } });
    const inverted = await app.inject({ method: 'POST', url: LOAD_PATH, payload: body({ layerStart: 8, layerEnd: 8 }) });
    expect(inverted.statusCode).toBe(400);
    expect(inverted.json()).toMatchObject({ error: { field: 'layerEnd' } });
    expect((await app.inject({ method: 'POST', url: LOAD_PATH, payload: body({ extra: 1 }) })).statusCode).toBe(400);
    await app.close();
    const guarded = agent(true);
    const unsigned = await guarded.app.inject({ method: 'POST', url: LOAD_PATH, payload: body() });
    expect(unsigned.statusCode).toBe(401);
    expect(guarded.engine.holds().spans).toEqual([]);
    await guarded.app.close();
  });
});
