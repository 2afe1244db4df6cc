import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadScenario, loadTopology, type Loaded, type Topology } from '../../src/sim/index.js';
import { MAX_JSON_DEPTH, parseStrictJson } from '../../src/sim/strict-json.js';

const noTopology = (): Loaded<Topology> => {
  throw new Error('not used');
};

describe('parseStrictJson', () => {
  it('parses what JSON.parse parses, to the same value, for any JSON text without repeated keys', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom(0, 2), (value, indent) => {
        const text = JSON.stringify(value, null, indent);
        const parsed = parseStrictJson(text);
        expect(parsed.ok).toBe(true);
        if (parsed.ok) expect(parsed.value).toStrictEqual(JSON.parse(text));
      }),
      { seed: 7, numRuns: 300 },
    );
  });

  it('accepts and refuses what JSON.parse does, to the same value (repeated keys and a BOM aside)', () => {
    // Random text, and JSON text with one character deleted: mostly near misses.
    const nearMiss = fc.json().chain((t) => fc.nat({ max: Math.max(t.length - 1, 0) }).map((i) => t.slice(0, i) + t.slice(i + 1)));
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 12 }), nearMiss), (text) => {
        let expected: { value: unknown } | undefined;
        try {
          expected = { value: JSON.parse(text) as unknown };
        } catch {
          expected = undefined;
        }
        const parsed = parseStrictJson(text);
        if (expected === undefined || text.startsWith('\ufeff')) expect(parsed.ok).toBe(false);
        else if (parsed.ok) expect(parsed.value).toStrictEqual(expected.value);
        else expect(parsed.error.detail).toContain('duplicate key');
      }),
      { seed: 7, numRuns: 500 },
    );
  });

  it('names a repeated key with its path and both positions', () => {
    const r = parseStrictJson('{"a": {"b": 1,\n "b": 2}}');
    expect(r).toEqual({ ok: false, error: { path: ['a', 'b'], detail: 'invalid JSON at line 2 column 2: duplicate key "b" (first at line 1 column 8); each key may appear once' } });
  });

  it('keeps "__proto__" as an own key, as JSON.parse does', () => {
    const r = parseStrictJson('{"__proto__": {"polluted": true}, "a": 1}');
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const value = r.value as Record<string, unknown>;
    expect(Object.keys(value)).toEqual(['__proto__', 'a']);
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('names a BOM, shows unexpected characters escaped, and bounds the nesting', () => {
    expect(parseStrictJson('\ufeff{}')).toMatchObject({ ok: false, error: { detail: expect.stringContaining('byte-order mark') } });
    expect(parseStrictJson('{"a":\u0001}')).toMatchObject({ ok: false, error: { detail: 'invalid JSON at line 1 column 6: unexpected U+0001 (inside $.a)' } });
    const deep = `${'['.repeat(MAX_JSON_DEPTH + 2)}${']'.repeat(MAX_JSON_DEPTH + 2)}`;
    expect(parseStrictJson(deep)).toMatchObject({ ok: false, error: { detail: expect.stringContaining(`nested deeper than ${MAX_JSON_DEPTH} levels`) } });
    expect(parseStrictJson(`${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}`).ok).toBe(true);
  });
});

describe('topology and scenario files with hostile ids', () => {
  const topology = (ids: readonly string[], models: readonly string[]) =>
    JSON.stringify({ models: [{ id: models[0], layers: 4, pipelines: 2, fallback: models[1] }, { id: models[1], layers: 2 }], nodes: ids.map((id, i) => ({ id, memoryGb: 4 + i, score: 1 + i })) });

  it('load exactly like ordinary ids', () => {
    const plain = loadTopology(topology(['a', 'b', 'c', 'd'], ['m', 'n']), 't.json');
    const hostile = loadTopology(topology(['__proto__', 'constructor', 'hasOwnProperty', 'toString'], ['__proto__', 'valueOf']), 't.json');
    expect(plain.ok && hostile.ok).toBe(true);
    if (!plain.ok || !hostile.ok) return;
    expect(hostile.value.nodes.map((n) => n.id)).toEqual(['__proto__', 'constructor', 'hasOwnProperty', 'toString']);
    expect(hostile.value.models.map((m) => [m.id, m.fallback])).toEqual([['__proto__', 'valueOf'], ['valueOf', undefined]]);
    expect(hostile.value.nodes.map(({ id: _id, ...rest }) => rest)).toEqual(plain.value.nodes.map(({ id: _id, ...rest }) => rest));
  });

  it('a node id listed twice is caught even when it is "__proto__"', () => {
    const r = loadTopology(topology(['__proto__', 'x', '__proto__'], ['m', 'n']), 't.json');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.message).toBe('t.json: $.nodes[2].id: duplicate node id "__proto__" (already at $.nodes[0].id)');
  });

  it('an inline scenario topology with a "__proto__" key is refused by name, not silently dropped', () => {
    const text = '{"name":"x","topology":{"__proto__":{},"models":[{"id":"m","layers":2}],"nodes":[{"id":"a","memoryGb":4}]},"steps":[{"step":"route"}]}';
    const r = loadScenario(text, 's.json', noTopology);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.message).toMatch(/^s\.json: \$\.topology: .*__proto__/);
  });
});
