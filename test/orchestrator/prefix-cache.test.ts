/**
 * The prefix cache with real processes (docs/serve.md, "Prefix cache"): a `serve` and four agents
 * (two copies of two stages). Requests sharing a 4,096-character prefix land on one copy and its
 * agents report the prefix cached; SIGKILL a node of that copy and the requests move to the other
 * copy, whose first request finds nothing cached and whose next ones do.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { expectedDigest } from '../../src/wire/digest.js';
import { parseMetrics, startCli, stopAll, waitFor, type Child } from './processes.js';

const LAYERS = 8;
const nodes = [1, 2, 3, 4].map((i) => ({ id: `p${i}`, memoryGb: 10, score: 1 }));
const dir = mkdtempSync(join(tmpdir(), 'hecate-prefix-'));
const topologyFile = join(dir, 'topology.json');
const tokenFile = join(dir, 'swarm-token');
writeFileSync(topologyFile, JSON.stringify({ models: [{ id: 'base', kind: 'base', layers: LAYERS, pipelines: 2, kvReserveGb: 1 }], nodes }));

afterAll(async () => {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
});

/** A 16,384-character system prompt (4,096 tokens) every request shares (varied text, not one repeated block). */
const SYSTEM = Array.from({ length: 2048 }, (_, i) => `s${String((i * 7919) % 100_003).padStart(7, '0')}`).join('');

describe('the prefix cache over real processes', () => {
  it('keeps requests sharing a prefix on one copy, with hits the agents report; a kill moves them and the new copy warms up', async () => {
    const { match: url } = await startCli('serve', ['serve', '--port', '0', '--topology', topologyFile, '--token-file', tokenFile, '--eject-after', '1', '--acceptable-pause-ms', '5000', '--per-layer-ms', '0.002'], /listening on (http:\/\/127\.0\.0\.1:\d+)/);
    const agents = new Map<string, Child>();
    await Promise.all(
      nodes.map(async (n) => {
        const { child } = await startCli(n.id, ['agent', '--id', n.id, '--memory', '10', '--score', '1', '--join', url, '--port', '0', '--per-layer-ms', '0.002', '--jitter', '0', '--token-file', tokenFile], /listening on (http:\/\/\S+)/, 30_000, { process: true });
        agents.set(n.id, child);
      }),
    );
    const status = async () => (await (await fetch(`${url}/v1/status`)).json()) as { status: string; nodes: { id: string; state: string }[]; plan: { pipelines: { stages: { nodeId: string }[] }[] } };
    const ready = await waitFor('every agent alive', async () => {
      const s = await status();
      return s.nodes.length === 4 && s.nodes.every((n) => n.state === 'alive') && s.status === 'healthy' ? s : undefined;
    }, 30_000);
    expect(ready.plan.pipelines).toHaveLength(2);
    const copyOf = (path: { nodeId: string }[]) => path.map((p) => p.nodeId).join('+');
    const copies = ready.plan.pipelines.map((p) => copyOf(p.stages));
    const cached = async (source: 'agent' | 'router') => parseMetrics(await (await fetch(`${url}/metrics`)).text()).get(`hecate_cached_tokens_total{source="${source}"}`) ?? 0;
    const generate = async (i: number, system = SYSTEM) => {
      const prompt = `${system} question ${i}?`;
      const before = await cached('agent');
      const response = await fetch(`${url}/v1/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'base', prompt, steps: 2 }) });
      const body = (await response.json()) as { digest: string; path: { nodeId: string }[] };
      expect(response.status, JSON.stringify(body)).toBe(200);
      expect(body.digest).toBe(expectedDigest(LAYERS, prompt, 2));
      return { copy: copyOf(body.path), agentCached: (await cached('agent')) - before };
    };

    // Both copies serve once first (short prompts), so neither is priced by a first call's start-up
    // time: two at once, the second routed around the first's reservation.
    const started = new Set<string>();
    for (let i = 0; started.size < 2 && i < 20; i += 2) for (const r of await Promise.all([generate(i, `warm-up ${i}`), generate(i + 1, `warm-up ${i + 1}`)])) started.add(r.copy);
    expect(started.size).toBe(2);

    // Warm: one copy takes them all; from the second on, its agents report the shared prefix cached.
    const warm = [];
    for (let i = 0; i < 4; i++) warm.push(await generate(i));
    const home = warm[0]?.copy as string;
    expect(copies).toContain(home);
    expect(warm.map((w) => w.copy)).toEqual([home, home, home, home]);
    expect(warm[0]?.agentCached).toBe(0);
    const routerBefore = await cached('router');
    for (const w of warm.slice(1)) expect(w.agentCached).toBeGreaterThanOrEqual(4096); // 16,384 characters: 256 blocks of 16 tokens
    expect(routerBefore).toBeGreaterThanOrEqual(3 * 4096);

    // Kill the home copy's second stage: the first call to it fails, the node is ejected, the
    // request resumes elsewhere, and the next requests go to the other copy, cold and then warm.
    const victim = home.split('+')[1] as string;
    agents.get(victim)?.process.kill('SIGKILL');
    await generate(10); // resumes past the dead node
    await waitFor(`${victim} down`, async () => ((await status()).nodes.find((n) => n.id === victim)?.state === 'down' ? true : undefined), 10_000, 50);
    const moved = [];
    for (let i = 20; i < 23; i++) moved.push(await generate(i));
    const other = copies.find((c) => c !== home) as string;
    expect(moved.map((m) => m.copy)).toEqual([other, other, other]);
    expect(moved[0]?.agentCached).toBe(0);
    for (const m of moved.slice(1)) expect(m.agentCached).toBeGreaterThanOrEqual(4096);
  }, 60_000);
});
