/**
 * The HTML report's words agree with each other (issue 40): the header counts copies and nodes
 * as step 1 does and then what the run added; a run without a seed names its new copies so a
 * reader can say them; a node the run adds later or retires is said to be so, not "not in the
 * swarm". Renders in memory, no browser (test/cli/html-report.test.ts drives Chromium).
 */
import { describe, expect, it } from 'vitest';
import { renderHtmlReport } from '../../src/sim/report-html.js';
import { runSwarmSim, type SwarmSimReport } from '../../src/sim/swarm-sim.js';
import { topologyFromValue } from '../../src/sim/topology.js';
import { readFileSync } from 'node:fs';

const loaded = topologyFromValue(JSON.parse(readFileSync('examples/swarm.json', 'utf8')), 'examples/swarm.json', { pipelines: 2 });
if (!loaded.ok) throw loaded.error;
const topology = loaded.value;

function render(options: Parameters<typeof runSwarmSim>[1]): { report: SwarmSimReport; html: string; sections: string[] } {
  const frames: { plan: SwarmSimReport['plan']; nodes: Record<string, { alive: boolean; samples: number }> }[] = [];
  const report = runSwarmSim(topology, { ...options, onStep: (_s, state) => void frames.push({ plan: state.plan, nodes: { ...state.nodes } }) });
  const html = renderHtmlReport({ report, frames, profiles: topology.nodes });
  return { report, html, sections: html.split('<section class="step"').slice(1) };
}

const fact = (html: string, name: string) => new RegExp(`<dt>${name}</dt><dd>([^<]*)</dd>`).exec(html)?.[1];

describe('the HTML report of swarm-sim --kill gpu (examples/swarm.json, 2 copies each)', () => {
  const { report, html, sections } = render({ kill: 'gpu' });

  it('counts copies as step 1 plans them, then the new ones; nodes as at the start, then those that joined', () => {
    const start = report.steps[0];
    expect(start?.step).toBe('start');
    const planned = start?.step === 'start' ? start.pipelines.length : -1;
    expect(html).toContain(`planned ${planned} copies`);
    expect(fact(html, 'copies')).toBe(`${planned} planned + 1 new`);
    expect(sections[0]).toMatch(new RegExp(`<span class="count">${topology.nodes.length} nodes, `));
    expect(fact(html, 'nodes')).toBe(`${topology.nodes.length} at the start + 1 joined`);
  });

  it('names the copy growth adds without a seed as <model>/new-1, with a seed by the seeded id source', () => {
    const growth = report.steps.find((s) => s.step === 'growth');
    expect(growth?.step === 'growth' ? growth.pipelines : []).toEqual(['hecate-8b/new-1']);
    expect(html).toContain('hecate-8b/new-1');
    const seeded = render({ kill: 'gpu', seed: 1 }).report.steps.find((s) => s.step === 'growth');
    expect(seeded?.step === 'growth' ? seeded.pipelines : []).toEqual([expect.stringMatching(/^hecate-8b\/[\w-]{10}$/)]);
    expect(render({ kill: 'gpu' }).html).toBe(html); // no seed, still the same bytes
  });

  it('says the newcomer has not joined yet before its step, and nothing of it after', () => {
    const joins = report.steps.findIndex((s) => s.step === 'growth');
    const newcomer = report.steps[joins]?.step === 'growth' ? (report.steps[joins] as { added: { id: string } }).added.id : '';
    sections.forEach((section, i) => {
      const line = /<p class="nodes">.*?<\/p>/.exec(section)?.[0] ?? '';
      expect(line, `step ${i + 1}`).not.toContain('not in the swarm');
      expect(line.includes(`<span class="kind">not joined yet</span><span class="chip absent" data-nodes="${newcomer}"`), `step ${i + 1}`).toBe(i < joins);
    });
  });

  it('says a retired node is retired from its step on', () => {
    const retired = render({ kill: 'gpu', retire: 'phone' });
    const at = retired.report.steps.findIndex((s) => s.step === 'retire');
    expect(at).toBeGreaterThan(0);
    retired.sections.forEach((section, i) => {
      const line = /<p class="nodes">.*?<\/p>/.exec(section)?.[0] ?? '';
      expect(line.includes('<span class="kind">retired</span><span class="chip absent" data-nodes="phone"'), `step ${i + 1}`).toBe(i >= at);
    });
  });
});
