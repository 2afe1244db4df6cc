/**
 * The conformance runner against real agents over loopback (docs/engine.md, "Conformance"): an
 * honest digest agent passes every check, and each mutant fails the check written for its fault —
 * one that ignores its replay, one that answers nondeterministically, one that takes calls
 * without checking their signature.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent/agent.js';
import { DigestEngine } from '../../src/agent/engines/digest-engine.js';
import type { StageEngine } from '../../src/agent/stage-engine.js';
import { runConformance, type ConformanceReport } from '../../src/conformance/run-conformance.js';
import { systemClock } from '../../src/runtime/clock.js';
import { loadAgentKey } from '../../src/wire/agent-key.js';
import { cli } from '../cli/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'hecate-conformance-'));
const secret = new Uint8Array(32).fill(3);
const agents: RunningAgent[] = [];
afterAll(async () => {
  await Promise.all(agents.map((a) => a.stop()));
  rmSync(dir, { recursive: true, force: true });
});

const digest = (): DigestEngine => new DigestEngine({ score: 1000, seed: 1, perLayerMs: 0, jitter: 0, maxStageMs: 60_000, kvCacheGb: 1, clock: systemClock });

/** An engine that runs `inner` but for the methods given. */
function mutant(inner: StageEngine, overrides: Partial<StageEngine>): StageEngine {
  const delegate: Record<string, unknown> = {};
  const source = inner as unknown as Record<string, unknown>;
  for (const key of ['kind', 'maxWidth']) if (source[key] !== undefined) delegate[key] = source[key];
  for (const key of ['load', 'step', 'rebuild', 'drop', 'holds', 'check']) {
    const method = source[key];
    if (typeof method === 'function') delegate[key] = method.bind(inner);
  }
  return { ...(delegate as unknown as StageEngine), ...overrides };
}

/** A port free now on loopback. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Runs the runner against an agent of `engine` that joins it; `signed`: the agent holds the secret. */
async function check(id: string, engine: StageEngine, signed = true): Promise<ConformanceReport> {
  const port = await freePort();
  const agent = await startAgent({ id, memoryGb: 8, score: 1, join: `http://127.0.0.1:${port}`, heartbeatMs: 100, engine, ...(signed ? { auth: { secret, key: loadAgentKey(join(dir, `${id}.json`), id).key } } : {}) });
  agent.joined.catch(() => {}); // the unsigned agent's join is refused, as it must be
  agents.push(agent);
  return runConformance({ secret, port, agent: agent.url, timeoutMs: signed ? 5000 : 1500 });
}

const failing = (report: ConformanceReport) => report.checks.filter((c) => !c.ok).map((c) => c.name);

describe('hecate-node conformance', () => {
  it('passes an honest digest agent on every check', async () => {
    const report = await check('honest', digest());
    expect(report.checks.length).toBeGreaterThanOrEqual(15);
    expect(report.checks.filter((c) => !c.ok)).toEqual([]);
  });

  it('fails an agent that ignores its replay, on the replay check', async () => {
    const inner = digest();
    const report = await check('amnesiac', mutant(inner, { rebuild: async (sessionId, _span, inputs) => (inner.drop(sessionId), inputs) }));
    expect(failing(report)).toContain('drop then replay');
  });

  it('fails an agent that answers the same call differently, on determinism', async () => {
    const inner = digest();
    let n = 0;
    const report = await check('dice', mutant(inner, {
      step: async (call) => {
        const out = await inner.step(call);
        const tensor = 'output' in out ? out.output : out;
        const data = Uint8Array.from(tensor.data);
        data[0] = (data[0] as number) ^ (++n & 0xff);
        return { ...tensor, data };
      },
    }));
    expect(failing(report)).toContain('deterministic');
  });

  it('fails an agent that takes calls without checking their signature', async () => {
    const report = await check('open', digest(), false);
    expect(failing(report)).toEqual(expect.arrayContaining(['join', 'unsigned call refused', 'bad signature refused', 'call for another agent refused', 'replayed call refused']));
  });

  it('answers --help and refuses a bad --agent with exit 2', async () => {
    const help = await cli('conformance', '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--token-file');
    const bad = await cli('conformance', '--agent', 'ftp://x');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/flag --agent/);
  });
});
