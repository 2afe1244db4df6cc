import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderHtmlReport } from '../../src/sim/report-html.js';
import { densityFor } from '../../src/sim/report-overview.js';
import { runSwarmSim, type SwarmSimReport } from '../../src/sim/swarm-sim.js';
import { findChromium, HeadlessPage } from './cdp.js';
import { cli } from './run-cli.js';

// `npm test` builds first (pretest); in a manual run, `npm run build` before vitest.
const SCREENSHOT = 'docs/report-screenshot.png';
const tmp = mkdtempSync(join(tmpdir(), 'hecate-html-'));

const topology = {
  models: [
    { id: 'base', kind: 'base' as const, layers: 12, fallback: 'tiny' },
    { id: 'tiny', kind: 'expert' as const, layers: 4, layerGb: 0.5 },
  ],
  nodes: [
    { id: 'big', memoryGb: 8, score: 8 },
    { id: 'mid', memoryGb: 8, score: 3 },
    { id: 'small', memoryGb: 6, score: 1 },
  ],
};

describe('renderHtmlReport', () => {
  const frames: { plan: SwarmSimReport['plan']; nodes: Record<string, { alive: boolean; samples: number; suspect?: boolean }> }[] = [];
  const report = runSwarmSim(topology, { kill: 'mid', seed: 3, retire: 'small', onStep: (_s, state) => void frames.push({ plan: state.plan, nodes: { ...state.nodes } }) });
  const html = renderHtmlReport({ report, frames, profiles: topology.nodes });
  const sections = html.split('<section class="step"').slice(1);

  it('draws one section per step, reachable at #step=N, self-contained: one inline script, no external resource', () => {
    expect(sections).toHaveLength(report.steps.length);
    sections.forEach((s, i) => expect(s).toContain(` id="step=${i + 1}"`));
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).toContain('<script>');
    expect(html).not.toMatch(/<link|<img|<iframe|@import|url\(|\ssrc=/i);
    expect(html.match(/\shref="[^"]*"/g)?.every((h) => /^ href="#step=\d+"$/.test(h))).toBe(true);
    expect(html).not.toMatch(/https?:|\/\/[a-z]/i);
  });

  it('marks the dead node by shape (✕, hatched band) in the failover step and not before, and shows the status badge', () => {
    const failover = report.steps.findIndex((s) => s.step === 'failover');
    expect(sections[failover]).toMatch(/<div class="cp broken"[^>]*data-nodes="[^"]*\bmid\b[^"]*"[^>]*><b class="mk" aria-label="broken: a node is down">✕<\/b>/);
    expect(sections[failover]).toContain('<i class="s down"');
    expect(sections[failover]).toContain('<span class="chip down" data-nodes="mid"');
    expect(sections[0]).not.toContain('class="s down"');
    expect(sections[0]).not.toContain('class="cp broken');
    report.steps.forEach((step, i) => expect(sections[i]).toContain(`<span class="badge ${step.status}">${step.status}</span>`));
  });

  it('draws the route served after each step as a row of its stages, outlined and marked ▶', () => {
    report.steps.forEach((step, i) => {
      if (step.route === null) return;
      const row = new RegExp(`<div class="cp route served" style="--m:[^"]+" data-nodes="([^"]*)"[^>]*><b class="mk"[^>]*>▶</b><span class="lb">route ${step.route.pipelineId}</span>`).exec(sections[i] ?? '');
      expect(row, `the route row of step ${i + 1}`).not.toBeNull();
      expect(row?.[1]?.split(' ')).toEqual([...new Set(step.route.stages.map((s) => s.nodeId))]);
    });
  });

  it('draws every copy of every model as one row in every step, in the same order', () => {
    const ids = [...new Set(frames.flatMap((f) => f.plan.pipelines.map((p) => p.id)))];
    const order = (section: string) => [...section.matchAll(/<div class="cp[^"]*"[^>]* title="([^" (:]+)[ :]/g)].map((m) => m[1]);
    const overview = (section: string) => section.slice(section.indexOf('<div class="overview'));
    const first = order(overview(sections[0] ?? ''));
    expect([...first].sort()).toEqual([...ids].sort());
    for (const s of sections) expect(order(overview(s))).toEqual(first);
  });

  it('marks a suspect node by shape (◆, striped band) as well as colour', () => {
    const suspect = frames.map((f) => ({ plan: f.plan, nodes: { ...f.nodes, small: { alive: true, samples: 1, suspect: true } } }));
    const page = renderHtmlReport({ report, frames: suspect, profiles: topology.nodes });
    const first = page.split('<section class="step"')[1] ?? '';
    expect(first).toContain('<i class="s suspect"');
    expect(first).toContain('<span class="chip suspect" data-nodes="small"');
    expect(first).toContain('3 nodes, 3 serving');
    expect(first).toMatch(/<div class="cp suspect"[^>]*><b class="mk" aria-label="a node is suspected">◆<\/b>/);
  });

  it("lists each copy's per-token time (compute + hops) and marks the served copy", () => {
    report.steps.forEach((step, i) => {
      for (const c of step.copies) expect(sections[i]).toContain(`per-token ${c.pipelineId}</dt><dd>${c.perTokenMs.toFixed(1)} ms = compute ${c.computeMs.toFixed(1)} + hops ${c.hopMs.toFixed(1)}`);
      if (step.route !== null && !step.route.degraded) expect(sections[i]).toMatch(new RegExp(`per-token ${step.route.pipelineId}</dt><dd>[^<]*← route`));
    });
    expect(html).toContain('broken (a node is down)');
  });

  it('spells out the recovery strategy', () => {
    const failover = report.steps.find((s) => s.step === 'failover');
    expect(failover?.step === 'failover' && failover.recovery?.strategy).toBeTruthy();
    const words = { copy: 'intact copy', splice: 'splice', degraded: 'DEGRADED', unaffected: 'unaffected' } as const;
    if (failover?.step === 'failover' && failover.recovery !== null) expect(html).toContain(`Recovery: ${words[failover.recovery.strategy]}`);
  });

  it('draws a failed step with no route and says the model is unrecoverable', () => {
    const solo = { models: [{ id: 'm', layers: 8 }], nodes: [{ id: 'solo', memoryGb: 8 }] };
    const failed = runSwarmSim(solo, { kill: 'solo', seed: 1 });
    const page = renderHtmlReport({ report: failed });
    const step = failed.steps.findIndex((s) => s.step === 'failover');
    expect(failed.steps[step]).toMatchObject({ status: 'failed', route: null });
    const section = page.split('<section class="step"')[step + 1] ?? '';
    expect(section).toContain('<span class="badge failed">failed</span>');
    expect(section).toContain('<p class="noroute">✕ No route: NoHealthyPipeline');
    expect(section).toContain('Recovery: none — m is unrecoverable');
    expect(section).not.toContain('class="cp route');
  });

  it('escapes ids from user files', () => {
    const evil = { ...topology, nodes: [...topology.nodes, { id: '<img src=x onerror=alert(1)>', memoryGb: 4 }] };
    const page = renderHtmlReport({ report: runSwarmSim(evil, { kill: 'mid', seed: 1 }), profiles: evil.nodes });
    expect(page).not.toContain('<img');
    expect(page).toContain('&lt;img src=x');
  });

  it('still draws every step from the document alone (final plan, dead nodes replayed from the steps)', () => {
    const alone = renderHtmlReport({ report });
    const parts = alone.split('<section class="step"');
    expect(parts.length - 1).toBe(report.steps.length);
    const failover = report.steps.findIndex((s) => s.step === 'failover');
    expect(parts[failover + 1]).toContain('<span class="chip down" data-nodes="mid"');
  });
});

describe('renderHtmlReport, twice', () => {
  it('draws the same bytes for the same seeded run', () => {
    const draw = () => {
      const frames: { plan: SwarmSimReport['plan']; nodes: Record<string, { alive: boolean; samples: number }> }[] = [];
      const report = runSwarmSim(topology, { kill: 'mid', seed: 5, onStep: (_s, state) => void frames.push({ plan: state.plan, nodes: state.nodes }) });
      return renderHtmlReport({ report, frames, profiles: topology.nodes });
    };
    expect(draw()).toBe(draw());
  });
});

describe('densityFor', () => {
  it('names the nodes in the bands up to 40 copies, labels copies up to 400, draws bars only beyond', () => {
    expect([1, 40, 41, 400, 401, 5000].map(densityFor)).toEqual(['full', 'full', 'medium', 'medium', 'dense', 'dense']);
  });
});

describe('hecate-node swarm-sim --html, in headless Chromium', () => {
  const chromium = findChromium();
  let page: HeadlessPage | undefined;

  beforeAll(async () => {
    if (chromium === undefined) return;
    page = await HeadlessPage.launch(chromium, 1100, 900);
  });
  afterAll(async () => {
    await page?.close();
  });

  it('opens with one step shown at a time, #step=N showing step N, no console error, and saves the failover step as the screenshot in docs/see-it.md', async () => {
    if (chromium === undefined || page === undefined) {
      throw new Error('chromium is not installed: run scripts/ensure-chromium.sh (apt-get install -y chromium), or set CHROMIUM=/path/to/chromium');
    }
    const file = join(tmp, 'report.html');
    const run = await cli('swarm-sim', '--topology', 'examples/swarm.json', '--kill', 'gpu', '--pipelines', '2', '--seed', '1', '--html', file);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout) as SwarmSimReport;
    expect(readFileSync(file, 'utf8')).toContain('<!doctype html>');
    const failover = doc.steps.findIndex((s) => s.step === 'failover') + 1;

    await page.send('Network.enable');
    await page.goto(pathToFileURL(file).href);
    const shown = () => page?.evaluate<string[]>("[...document.querySelectorAll('section.step')].filter((s) => getComputedStyle(s).display !== 'none').map((s) => s.id)");
    expect(await page.evaluate<number>("document.querySelectorAll('section.step').length")).toBe(doc.steps.length);
    expect(await shown()).toEqual(['step=1']);
    await page.goto(`${pathToFileURL(file).href}?again#step=${failover}`);
    expect(await shown()).toEqual([`step=${failover}`]);
    const broken = await page.evaluate<number>("document.querySelectorAll('section.step.current .cp.broken[data-nodes~=\"gpu\"]').length");
    expect(broken).toBeGreaterThan(0);
    expect(page.errors).toEqual([]);
    expect(page.requests.some((u) => u.startsWith('file:'))).toBe(true);
    expect(page.requests.filter((u) => !u.startsWith('file:') && !u.startsWith('data:'))).toEqual([]);

    const png = await page.screenshot();
    expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
    expect(png.readUInt32BE(16)).toBe(1100); // IHDR width
    mkdirSync(resolve('docs'), { recursive: true });
    writeFileSync(resolve(SCREENSHOT), png);
  });

  it('exits 2 naming the file when the report cannot be written, with nothing on stdout', async () => {
    const r = await cli('swarm-sim', '--topology', 'examples/swarm.json', '--html', join(tmp, 'no-such-dir', 'r.html'));
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('no-such-dir');
    // Checked before the run: the file cannot be written, so nothing runs.
    expect(r.stderr).toMatch(/flag --html: cannot write ".*no-such-dir.*": no such directory/);
  });
});
