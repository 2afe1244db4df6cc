import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/sim/input-error.js';
import { loadTopology, topologyFromValue, type Topology } from '../../src/sim/topology.js';

const FILE = 'topo.json';
const valid = {
  models: [{ id: 'base', layers: 8 }, { id: 'expert', layers: 4, kind: 'expert' }],
  nodes: [
    { id: 'a', memoryGb: 8, score: 2 },
    { id: 'b', memoryGb: 8 },
    { id: 'c', memoryGb: 8, latencyMs: 5 },
  ],
};

function errorOf(value: unknown, options = {}): InputError {
  const r = topologyFromValue(value, FILE, options);
  if (r.ok) throw new Error('expected an error');
  return r.error;
}

describe('loadTopology', () => {
  it('returns a plain topology for a valid file', () => {
    const r = loadTopology(JSON.stringify(valid), FILE);
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.value.nodes.map((n) => n.id)).toEqual(['a', 'b', 'c']);
  });

  it('loads the shipped example with two copies', () => {
    const r = loadTopology(readFileSync('examples/swarm.json', 'utf8'), 'examples/swarm.json', { pipelines: 2 });
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.value.models.every((m) => m.pipelines === 2)).toBe(true);
  });

  it('names the file and the position of invalid JSON', () => {
    const r = loadTopology('{\n  "models": [1,\n  "nodes"', FILE);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.message).toMatch(/^topo\.json: invalid JSON at line 3 column \d+: /);
    const token = loadTopology('{ "models": [ }', FILE);
    expect(token.ok).toBe(false);
    if (!token.ok) expect(token.error.message).toBe('topo.json: invalid JSON at line 1 column 15: unexpected "}" (inside $.models[0])');
  });

  it('names the JSON path of a duplicate node id', () => {
    const e = errorOf({ ...valid, nodes: [...valid.nodes, { id: 'b', memoryGb: 1 }] });
    expect(e.message).toBe('topo.json: $.nodes[3].id: duplicate node id "b" (already at $.nodes[1].id)');
  });

  it('names the JSON path of a negative memory', () => {
    const e = errorOf({ ...valid, nodes: [{ id: 'a', memoryGb: -4 }] });
    expect(e.path).toBe('$.nodes[0].memoryGb');
    expect(e.message).toContain('must be >= 0');
  });

  it('rejects an unknown key (a typo) with its path', () => {
    expect(errorOf({ ...valid, nodes: [{ id: 'a', memoryGB: 4 }] }).path).toMatch(/^\$\.nodes\[0\]/);
  });

  it('names the model that does not fit as an impossible capacity', () => {
    const e = errorOf({ models: [{ id: 'small', layers: 2 }, { id: 'huge', layers: 400 }], nodes: [{ id: 'a', memoryGb: 16 }] });
    expect(e.path).toBe('$.models[1]');
    expect(e.detail).toMatch(/^impossible capacity: .*huge/);
  });

  it('counts copies asked by --pipelines in the capacity check', () => {
    expect(topologyFromValue(valid, FILE, { pipelines: 2 }).ok).toBe(true);
    expect(errorOf(valid, { pipelines: 4 }).detail).toMatch(/impossible capacity/);
  });

  it('rejects a fallback that names no model, and two base models', () => {
    expect(errorOf({ ...valid, models: [{ id: 'base', layers: 2, fallback: 'nope' }] }).path).toBe('$.models[0].fallback');
    expect(errorOf({ ...valid, models: [{ id: 'x', layers: 2 }, { id: 'y', layers: 2, kind: 'base' }] }).path).toBe('$.models[1].kind');
  });

  it('takes a stage bound per model and names the path of a bad one', () => {
    const r = topologyFromValue({ ...valid, models: [{ id: 'base', layers: 8, stageFactor: 1.5 }] }, FILE);
    expect(r.ok && r.value.models[0]?.stageFactor).toBe(1.5);
    const e = errorOf({ ...valid, models: [{ id: 'base', layers: 8, stageFactor: 0.5 }] });
    expect(e.path).toBe('$.models[0].stageFactor');
    expect(e.message).toContain('must be >= 1');
  });

  it('takes a KV reserve per model and names the path of a bad one', () => {
    const r = topologyFromValue({ ...valid, models: [{ id: 'base', layers: 8, kvReserveGb: 0.25 }] }, FILE);
    expect(r.ok && r.value.models[0]?.kvReserveGb).toBe(0.25);
    const e = errorOf({ ...valid, models: [{ id: 'base', layers: 8, kvReserveGb: -1 }] });
    expect(e.path).toBe('$.models[0].kvReserveGb');
    expect(e.message).toContain('must be >= 0');
  });

  it('takes a KV size per token per model and names the path of a bad one', () => {
    const r = topologyFromValue({ ...valid, models: [{ id: 'base', layers: 8, kvGbPerToken: 0.0003 }] }, FILE);
    expect(r.ok && r.value.models[0]?.kvGbPerToken).toBe(0.0003);
    const e = errorOf({ ...valid, models: [{ id: 'base', layers: 8, kvGbPerToken: 0 }] });
    expect(e.path).toBe('$.models[0].kvGbPerToken');
    expect(e.message).toContain('must be > 0');
  });

  it('reports paths inside a larger document', () => {
    expect(errorOf({ models: [], nodes: valid.nodes }, { at: '$.topology' }).path).toBe('$.topology.models');
  });
});

const FUZZ = { seed: 20240607, numRuns: 300 } as const;

/** The loader's contract: a topology, or an InputError naming the file — never a throw. */
function assertContract(result: ReturnType<typeof topologyFromValue>): void {
  if (result.ok) {
    const t: Topology = result.value;
    expect(t.nodes.length).toBeGreaterThan(0);
    expect(t.models.length).toBeGreaterThan(0);
  } else {
    expect(result.error).toBeInstanceOf(InputError);
    expect(result.error.message.startsWith(`${FILE}: `)).toBe(true);
    expect(result.error.message).not.toMatch(/\n/);
  }
}

const nodeArb = fc.record(
  {
    id: fc.oneof(fc.constantFrom('a', 'b', 'c', 'gpu', ''), fc.string()),
    memoryGb: fc.oneof(fc.integer({ min: -2, max: 64 }), fc.double(), fc.constant('8' as unknown as number)),
    score: fc.oneof(fc.double({ min: -1, max: 20 }), fc.constant(0)),
    latencyMs: fc.double({ min: -1, max: 100 }),
  },
  { requiredKeys: ['id'] },
);
const modelArb = fc.record(
  {
    id: fc.constantFrom('base', 'expert', 'tiny', ''),
    layers: fc.oneof(fc.integer({ min: -1, max: 80 }), fc.double()),
    layerGb: fc.oneof(fc.constantFrom(0.25, 0.5, 1, 2), fc.double()),
    pipelines: fc.integer({ min: -1, max: 5 }),
    kind: fc.constantFrom('base', 'expert', 'other'),
    fallback: fc.constantFrom('base', 'expert', 'tiny', 'nope'),
  },
  { requiredKeys: ['id', 'layers'] },
);

describe('topology loader (fuzz)', () => {
  it('never throws on arbitrary JSON values', () => {
    fc.assert(fc.property(fc.jsonValue(), (v) => assertContract(topologyFromValue(v, FILE))), FUZZ);
  });

  it('never throws on arbitrary values, including non-JSON ones', () => {
    fc.assert(fc.property(fc.anything(), (v) => assertContract(topologyFromValue(v, FILE))), FUZZ);
  });

  it('never throws on arbitrary text', () => {
    fc.assert(fc.property(fc.oneof(fc.string(), fc.json()), (text) => assertContract(loadTopology(text, FILE))), FUZZ);
  });

  it('never throws on near-valid topologies, with any --pipelines', () => {
    fc.assert(
      fc.property(
        fc.array(modelArb, { minLength: 0, maxLength: 3 }),
        fc.array(nodeArb, { minLength: 0, maxLength: 6 }),
        fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
        (models, nodes, pipelines) => assertContract(topologyFromValue({ models, nodes }, FILE, pipelines === undefined ? {} : { pipelines })),
      ),
      FUZZ,
    );
  });

  it('accepts every well-formed topology that fits, and plans it', () => {
    const wellFormed = fc
      .uniqueArray(fc.record({ id: fc.string({ minLength: 1, maxLength: 6 }), memoryGb: fc.integer({ min: 0, max: 32 }), score: fc.integer({ min: 1, max: 10 }) }), {
        minLength: 1,
        maxLength: 6,
        selector: (n) => n.id,
      })
      .chain((nodes) => fc.record({ nodes: fc.constant(nodes), models: fc.tuple(fc.record({ id: fc.constant('base'), layers: fc.integer({ min: 1, max: 40 }) })) }));
    fc.assert(
      fc.property(wellFormed, (t) => {
        const r = topologyFromValue(t, FILE);
        const room = t.nodes.reduce((s, n) => s + n.memoryGb, 0);
        // One copy on one layer per GB fits exactly when the total memory holds the layers.
        expect(r.ok).toBe(room >= (t.models[0]?.layers ?? 0));
        assertContract(r);
      }),
      FUZZ,
    );
  });
});
