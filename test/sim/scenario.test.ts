import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadScenario, runScenario, type Scenario } from '../../src/sim/scenario.js';
import { loadTopology } from '../../src/sim/topology.js';
import type { Loaded } from '../../src/sim/input-error.js';

const noRef = (): never => {
  throw new Error('no topology file in this test');
};

function load(file: string): Loaded<Scenario> {
  return loadScenario(readFileSync(file, 'utf8'), file, (ref, options) => {
    const path = join(dirname(file), ref);
    return loadTopology(readFileSync(path, 'utf8'), path, options);
  });
}

function inline(doc: unknown): Loaded<Scenario> {
  return loadScenario(JSON.stringify(doc), 's.json', noRef);
}

const topology = { models: [{ id: 'base', layers: 4, pipelines: 2 }], nodes: [{ id: 'a', memoryGb: 4 }, { id: 'b', memoryGb: 4 }] };

describe('shipped scenarios', () => {
  const files = readdirSync('scenarios').filter((f) => f.endsWith('.json'));
  it.each(files)('%s holds every expectation', (name) => {
    const loaded = load(join('scenarios', name));
    if (!loaded.ok) throw loaded.error;
    const result = runScenario(loaded.value);
    const failed = result.steps.flatMap((s) => s.expectations.filter((e) => !e.pass).map((e) => `#${s.index + 1} ${s.label}: ${e.name}: expected ${JSON.stringify(e.expected)}, got ${JSON.stringify(e.actual)}`));
    expect(failed).toEqual([]);
    expect(result.steps.some((s) => s.expectations.some((e) => !e.implicit))).toBe(true);
  });
});

describe('loadScenario', () => {
  it('names the file and the JSON path of a bad step', () => {
    const r = inline({ name: 'x', topology, steps: [{ step: 'kill' }] });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.message).toMatch(/^s\.json: \$\.steps\[0\]\.node: /);
  });

  it('rejects an unknown expectation (a typo) with its path', () => {
    const r = inline({ name: 'x', topology, steps: [{ step: 'route', expect: { stauts: 'healthy' } }] });
    if (r.ok) throw new Error('expected an error');
    expect(r.error.path).toBe('$.steps[0].expect');
    expect(r.error.detail).toContain('stauts');
  });

  it('reports topology problems under $.topology', () => {
    const r = inline({ name: 'x', topology: { ...topology, nodes: [{ id: 'a', memoryGb: 4 }, { id: 'a', memoryGb: 4 }] }, steps: [{ step: 'route' }] });
    if (r.ok) throw new Error('expected an error');
    expect(r.error.path).toBe('$.topology.nodes[1].id');
  });

  it('applies the scenario-level pipelines to every model', () => {
    const r = inline({ name: 'x', topology: { ...topology, models: [{ id: 'base', layers: 4 }] }, pipelines: 2, steps: [{ step: 'route' }] });
    if (!r.ok) throw r.error;
    expect(r.value.topology.models[0]?.pipelines).toBe(2);
  });
});

describe('runScenario', () => {
  function run(steps: unknown[], extra: object = {}) {
    const r = inline({ name: 'x', topology, steps, ...extra });
    if (!r.ok) throw r.error;
    return runScenario(r.value);
  }

  it('fails an expectation that does not hold, with expected and actual', () => {
    const result = run([{ step: 'kill', node: 'a', expect: { status: 'healthy' } }]);
    expect(result.pass).toBe(false);
    expect(result.steps[0]?.expectations.find((e) => e.name === 'status')).toMatchObject({ expected: 'healthy', actual: 'degraded', pass: false });
  });

  it('fails a step that throws when no error was expected, and goes on', () => {
    const result = run([{ step: 'kill', node: 'zz' }, { step: 'route', expect: { status: 'healthy' } }]);
    expect(result.steps[0]?.expectations[0]).toMatchObject({ name: 'no error', pass: false, implicit: true });
    expect(result.steps[1]?.pass).toBe(true);
  });

  it('fails an expected error that did not happen', () => {
    const result = run([{ step: 'route', expect: { error: 'Stopped' } }]);
    expect(result.steps[0]?.expectations[0]).toMatchObject({ name: 'error', actual: 'no error', pass: false });
  });

  it('checks the strategy of the recovery of the named model', () => {
    const result = run([{ step: 'kill', node: 'a', expect: { strategy: 'copy', avoid: ['a'], use: ['b'] } }]);
    expect(result.pass).toBe(true);
  });

  it('says there was no recovery when the route did not use the node', () => {
    const result = run([{ step: 'kill', node: 'b', expect: { strategy: 'copy' } }]);
    expect(result.steps[0]?.expectations.find((e) => e.name === 'recovery.strategy')).toMatchObject({ pass: false, actual: expect.stringMatching(/^no recovery/) });
  });
});

describe('loadScenario (fuzz)', () => {
  const FUZZ = { seed: 424242, numRuns: 200 } as const;
  const contract = (r: Loaded<Scenario>) => {
    if (!r.ok) {
      expect(r.error.message.startsWith('s.json')).toBe(true);
      expect(r.error.message).not.toMatch(/\n/);
    }
  };
  it('never throws on arbitrary JSON, nor on near-valid step lists', () => {
    fc.assert(fc.property(fc.jsonValue(), (v) => contract(loadScenario(JSON.stringify(v) ?? 'null', 's.json', noRef))), FUZZ);
    const step = fc.record(
      {
        step: fc.constantFrom('kill', 'revive', 'add', 'remove', 'report', 'route', 'stop', 'explode'),
        node: fc.oneof(fc.constantFrom('a', 'b', ''), fc.record({ id: fc.constantFrom('n', 'a'), memoryGb: fc.integer({ min: -1, max: 8 }) })),
        expect: fc.record({ status: fc.constantFrom('healthy', 'sad'), avoid: fc.array(fc.constantFrom('a', 'b')) }, { requiredKeys: [] }),
      },
      { requiredKeys: ['step'] },
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 6 }), (steps) => {
        const r = inline({ name: 'fuzz', topology, steps });
        contract(r);
        if (r.ok) expect(typeof runScenario(r.value).pass).toBe('boolean');
      }),
      FUZZ,
    );
  });
});
