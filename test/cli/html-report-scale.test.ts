/**
 * The HTML report read at the sizes a person meets it: the example swarm (6 nodes), 200 and
 * 1,000 nodes (seeded, generated here). In headless Chromium at a 1,280 px window, every step is
 * at most 3,000 CSS px tall, the killed node's copies are on screen in the step after the kill,
 * the node filter finds them, and at 200 nodes every step prints on at most 6 A4 pages.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderHtmlReport, type ReportFrame } from '../../src/sim/report-html.js';
import { runSwarmSim } from '../../src/sim/swarm-sim.js';
import type { Topology } from '../../src/sim/topology.js';
import { findChromium, HeadlessPage } from './cdp.js';

const WIDTH = 1280;
const HEIGHT = 900;
const MAX_HEIGHT = 3_000;
const MAX_PAGES = 6;

/** Six kinds of machine, as in examples/swarm.json; `n` of them drawn with a seeded generator. */
function swarmOf(n: number, seed: number): Topology {
  let s = seed >>> 0;
  const rnd = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const kinds = [
    ['gpu', 24, 16, 4],
    ['desktop', 16, 6, 6],
    ['laptop', 12, 3, 9],
    ['mini-pc', 8, 2.5, 8],
    ['tablet', 6, 1.5, 14],
    ['phone', 4, 1, 25],
  ] as const;
  const example = JSON.parse(readFileSync('examples/swarm.json', 'utf8')) as Topology;
  const nodes = Array.from({ length: n }, (_, i) => {
    const [kind, memoryGb, score, latencyMs] = kinds[Math.floor(rnd() * kinds.length)] ?? kinds[0];
    return { id: `${kind}-${String(i).padStart(4, '0')}`, memoryGb, score, latencyMs: latencyMs + Math.floor(rnd() * 5) };
  });
  return { models: example.models, nodes };
}

const tmp = mkdtempSync(join(tmpdir(), 'hecate-html-scale-'));
const chromium = findChromium();
let page: HeadlessPage | undefined;

beforeAll(async () => {
  if (chromium !== undefined) page = await HeadlessPage.launch(chromium, WIDTH, HEIGHT);
});
afterAll(async () => {
  await page?.close();
  rmSync(tmp, { recursive: true, force: true });
});

/** Shows step `n` of the loaded report the way a reader does: by its address. */
async function showStep(p: HeadlessPage, n: number): Promise<void> {
  await p.evaluate(`new Promise((resolve) => {
    if (location.hash === '#step=${n}') return resolve();
    addEventListener('hashchange', () => requestAnimationFrame(() => requestAnimationFrame(resolve)), { once: true });
    location.hash = 'step=${n}';
  })`);
}

const SIZES = [
  { name: 'the example (6 nodes)', topology: (): Topology => JSON.parse(readFileSync('examples/swarm.json', 'utf8')) as Topology },
  { name: '200 nodes', topology: () => swarmOf(200, 7) },
  { name: '1,000 nodes', topology: () => swarmOf(1_000, 11) },
];

describe.each(SIZES)('the HTML report of $name, in headless Chromium at 1,280 px', ({ name, topology }) => {
  it('keeps every step within 3,000 px, shows the killed node on screen after the kill, filters by node id, fetches nothing', async () => {
    if (chromium === undefined || page === undefined) {
      throw new Error('chromium is not installed: run scripts/ensure-chromium.sh (apt-get install -y chromium), or set CHROMIUM=/path/to/chromium');
    }
    const topo = topology();
    const frames: ReportFrame[] = [];
    const report = runSwarmSim(topo, { seed: 1, onStep: (_step, state) => void frames.push({ plan: state.plan, nodes: state.nodes }) });
    const file = join(tmp, `report-${topo.nodes.length}.html`);
    writeFileSync(file, renderHtmlReport({ report, frames, profiles: topo.nodes, title: `report of ${name}` }));
    const failover = report.steps.findIndex((s) => s.step === 'failover');
    expect(failover).toBeGreaterThan(0);

    const requests = page.requests.length;
    await page.send('Network.enable');
    await page.goto(`${pathToFileURL(file).href}#step=1`);
    const heights: number[] = [];
    for (let n = 1; n <= report.steps.length; n++) {
      await showStep(page, n);
      const shown = await page.evaluate<string[]>("[...document.querySelectorAll('section.step')].filter((s) => getComputedStyle(s).display !== 'none').map((s) => s.id)");
      expect(shown).toEqual([`step=${n}`]);
      heights.push(await page.evaluate<number>('document.documentElement.scrollHeight'));
    }
    for (const h of heights) expect(h, `page heights ${heights.join(', ')} px`).toBeLessThanOrEqual(MAX_HEIGHT);

    // The step after the kill: every copy that held the killed node is drawn broken (✕), the first
    // of them inside the first screen (the address scrolls to the step).
    const killed = report.kill;
    await showStep(page, failover + 1);
    const rows = await page.evaluate<{ cls: string; mark: string; top: number; bottom: number; height: number }[]>(
      `[...document.querySelectorAll('section.step.current .cp[data-nodes~=${JSON.stringify(killed)}]')].map((r) => ({ cls: r.className, mark: r.querySelector('.mk').textContent, top: r.getBoundingClientRect().top, bottom: r.getBoundingClientRect().bottom, height: r.getBoundingClientRect().height }))`,
    );
    const holding = (frames[failover]?.plan.pipelines ?? []).filter((p) => p.stages.some((s) => s.nodeId === killed)).length;
    expect(holding).toBeGreaterThan(0);
    expect(rows.length).toBeGreaterThanOrEqual(holding);
    for (const r of rows) {
      expect(r.cls).toContain('broken');
      expect(r.mark).toBe('✕');
      expect(r.height).toBeGreaterThan(8);
    }
    expect(rows[0]?.top).toBeGreaterThanOrEqual(0);
    expect(rows[0]?.bottom).toBeLessThanOrEqual(HEIGHT);
    // Before the kill the same node's copies are not broken.
    await showStep(page, failover);
    const before = await page.evaluate<string[]>(`[...document.querySelectorAll('section.step.current .cp[data-nodes~=${JSON.stringify(killed)}]')].map((r) => r.className)`);
    expect(before.length).toBeGreaterThan(0);
    for (const cls of before) expect(cls).not.toContain('broken');

    // The filter by node id: the copies holding a matching node light up, the address keeps it.
    await showStep(page, failover + 1);
    const found = await page.evaluate<{ hits: number; text: string; hash: string }>(`(() => {
      const input = document.getElementById('node-filter');
      input.value = ${JSON.stringify(killed)};
      input.dispatchEvent(new Event('input'));
      return { hits: document.querySelectorAll('section.step.current .overview .cp.hit').length, text: document.getElementById('node-hits').value, hash: location.hash };
    })()`);
    const matching = (frames[failover]?.plan.pipelines ?? []).filter((p) => p.stages.some((s) => s.nodeId.toLowerCase().includes(killed.toLowerCase()))).length;
    expect(found.hits).toBe(matching);
    expect(found.text).toContain(`in ${matching} cop`);
    expect(found.hash).toBe(`#step=${failover + 1}&node=${encodeURIComponent(killed)}`);

    expect(page.errors).toEqual([]);
    expect(page.requests.slice(requests).filter((u) => !u.startsWith('file:'))).toEqual([]);
  });
});

describe('the HTML report of 200 nodes, printed', () => {
  it('prints every step on at most 6 A4 pages', async () => {
    if (chromium === undefined || page === undefined) {
      throw new Error('chromium is not installed: run scripts/ensure-chromium.sh (apt-get install -y chromium), or set CHROMIUM=/path/to/chromium');
    }
    const topo = swarmOf(200, 7);
    const frames: ReportFrame[] = [];
    const report = runSwarmSim(topo, { seed: 1, onStep: (_step, state) => void frames.push({ plan: state.plan, nodes: state.nodes }) });
    const file = join(tmp, 'print-200.html');
    writeFileSync(file, renderHtmlReport({ report, frames, profiles: topo.nodes }));
    const pages: number[] = [];
    await page.goto(`${pathToFileURL(file).href}#step=1`);
    for (let n = 1; n <= report.steps.length; n++) {
      await showStep(page, n);
      const { data } = (await page.send('Page.printToPDF', { preferCSSPageSize: true, printBackground: true })) as { data: string };
      const pdf = Buffer.from(data, 'base64').toString('latin1');
      expect(pdf.startsWith('%PDF-')).toBe(true);
      pages.push((pdf.match(/\/Type\s*\/Page(?![a-zA-Z])/g) ?? []).length);
    }
    for (const n of pages) {
      expect(n, `pages per step: ${pages.join(', ')}`).toBeGreaterThanOrEqual(1);
      expect(n, `pages per step: ${pages.join(', ')}`).toBeLessThanOrEqual(MAX_PAGES);
    }
  });
});
