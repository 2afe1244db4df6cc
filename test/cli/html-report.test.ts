import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderHtmlReport } from '../../src/sim/report-html.js';
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
  const frames: { plan: SwarmSimReport['plan']; nodes: Record<string, { alive: boolean; samples: number }> }[] = [];
  const report = runSwarmSim(topology, { kill: 'mid', seed: 3, retire: 'small', onStep: (_s, state) => void frames.push({ plan: state.plan, nodes: { ...state.nodes } }) });
  const html = renderHtmlReport({ report, frames, profiles: topology.nodes });
  const svgs = html.split('<svg ').slice(1);

  it('draws one SVG per step, self-contained: no script, no external resource', () => {
    expect(svgs).toHaveLength(report.steps.length);
    expect(html).not.toMatch(/<script|<link|<img|<iframe|@import|url\(\s*['"]?(https?:|\/\/)/i);
    expect(html).not.toMatch(/\s(src|href)=/i);
    // The only URL is the SVG namespace, which is a name, not a fetch.
    expect(html.match(/https?:\/\/[^"'\s)]+/g)?.every((u) => u === 'http://www.w3.org/2000/svg')).toBe(true);
  });

  it('strikes the dead node through in the failover step and not before, and shows the status badge', () => {
    const failover = report.steps.findIndex((s) => s.step === 'failover');
    expect(svgs[failover]).toContain('class="node down">mid<');
    expect(svgs[0]).not.toContain('class="node down"');
    report.steps.forEach((step, i) => expect(svgs[i]).toContain(`class="badge" text-anchor="middle">${step.status}<`));
  });

  it('outlines every stage of the route served after each step', () => {
    report.steps.forEach((step, i) => {
      const outlines = svgs[i]?.match(/fill="none" stroke="#111" stroke-width="2.5"/g) ?? [];
      expect(outlines).toHaveLength(step.route?.stages.length ?? 0);
    });
  });

  it("lists each copy's per-token time (compute + hops) and marks the served copy", () => {
    const page = html.split('<section class="step"').slice(1);
    report.steps.forEach((step, i) => {
      for (const c of step.copies) expect(page[i]).toContain(`per-token ${c.pipelineId}</dt><dd>${c.perTokenMs.toFixed(1)} ms = compute ${c.computeMs.toFixed(1)} + hops ${c.hopMs.toFixed(1)}`);
      if (step.route !== null && !step.route.degraded) expect(page[i]).toMatch(new RegExp(`per-token ${step.route.pipelineId}</dt><dd>[^<]*← route`));
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
    const svg = page.split('<svg ')[step + 1] ?? '';
    expect(svg).toContain('>failed<');
    expect(svg).toContain('No route: NoHealthyPipeline');
    expect(svg).toContain('Recovery: none — m is unrecoverable');
    expect(svg).not.toContain('stroke-width="2.5"');
  });

  it('escapes ids from user files', () => {
    const evil = { ...topology, nodes: [...topology.nodes, { id: '<img src=x onerror=alert(1)>', memoryGb: 4 }] };
    const page = renderHtmlReport({ report: runSwarmSim(evil, { kill: 'mid', seed: 1 }), profiles: evil.nodes });
    expect(page).not.toContain('<img');
    expect(page).toContain('&lt;img src=x');
  });

  it('still draws every step from the document alone (final plan, dead nodes replayed from the steps)', () => {
    const alone = renderHtmlReport({ report });
    expect(alone.split('<svg ').length - 1).toBe(report.steps.length);
    const failover = report.steps.findIndex((s) => s.step === 'failover');
    expect(alone.split('<svg ')[failover + 1]).toContain('class="node down">mid<');
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

  it('opens with one SVG per step and no console error, and saves a screenshot for the README', async () => {
    if (chromium === undefined || page === undefined) {
      throw new Error('chromium is not installed: run scripts/ensure-chromium.sh (apt-get install -y chromium), or set CHROMIUM=/path/to/chromium');
    }
    const file = join(tmp, 'report.html');
    const run = await cli('swarm-sim', '--topology', 'examples/swarm.json', '--kill', 'gpu', '--pipelines', '2', '--seed', '1', '--html', file);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout) as SwarmSimReport;
    expect(readFileSync(file, 'utf8')).toContain('<!doctype html>');

    await page.send('Network.enable');
    await page.goto(pathToFileURL(file).href);
    const count = await page.evaluate<number>("document.querySelectorAll('svg').length");
    expect(count).toBe(doc.steps.length);
    const sizes = await page.evaluate<{ w: number; h: number }[]>("[...document.querySelectorAll('svg')].map((s) => ({ w: s.getBoundingClientRect().width, h: s.getBoundingClientRect().height }))");
    for (const s of sizes) expect(s.w * s.h).toBeGreaterThan(10_000);
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
