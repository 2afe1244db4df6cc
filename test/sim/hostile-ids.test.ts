/**
 * Any string id behaves exactly like `a` in the simulators too (docs/inputs.md): every shipped
 * scenario and the example swarm-sim run, with each node id renamed onto ids named after built-in
 * object properties (`__proto__`, `constructor`, `toString`, ...) or unicode ones, give the same
 * results as with the ordinary ids. The renaming preserves id order (ties break by id), so the
 * runs must agree to the bit once renamed back.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadScenario, runScenario } from '../../src/sim/scenario.js';
import { runSwarmSim } from '../../src/sim/swarm-sim.js';
import { loadTopology, type Topology } from '../../src/sim/topology.js';

const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Node ids a plain object would mistake for its own members, and unicode ones, in code-unit order. */
const HOSTILE = [
  '__proto__',
  '__defineGetter__',
  'constructor',
  'hasOwnProperty',
  'isPrototypeOf',
  'propertyIsEnumerable',
  'toLocaleString',
  'toString',
  'valueOf',
  'ñodo',
  '节点',
  '🙂 node',
].sort(byCodeUnits);

/** An order-preserving bijection from `ids` onto the hostile ids. */
function renaming(ids: Iterable<string>): Map<string, string> {
  const sorted = [...new Set(ids)].sort(byCodeUnits);
  if (sorted.length > HOSTILE.length) throw new Error(`${sorted.length} ids, only ${HOSTILE.length} hostile ones`);
  return new Map(sorted.map((id, i) => [id, HOSTILE[i] as string]));
}

/** `value` with every string equal to a key of `map` replaced by its value (object keys untouched). */
function renameValues(value: unknown, map: ReadonlyMap<string, string>): unknown {
  if (typeof value === 'string') return map.get(value) ?? value;
  if (Array.isArray(value)) return value.map((v) => renameValues(v, map));
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renameValues(v, map)]));
  return value;
}

/** `value` with every occurrence of a key of `back` (in strings and keys alike) replaced by its value. */
function renameBack(value: unknown, back: ReadonlyMap<string, string>): unknown {
  const pattern = new RegExp([...back.keys()].sort((a, b) => b.length - a.length).map((h) => h.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'gu');
  return JSON.parse(JSON.stringify(value).replace(pattern, (h) => back.get(h) ?? h)) as unknown;
}

/** Every node id a scenario document names: its inline topology's nodes and its steps' `node`s. */
function scenarioNodeIds(doc: { topology?: unknown; steps: { node?: unknown }[] }, fileTopology?: { nodes: { id: string }[] }): string[] {
  const topology = typeof doc.topology === 'object' ? (doc.topology as { nodes: { id: string }[] }) : fileTopology;
  const ids = (topology?.nodes ?? []).map((n) => n.id);
  for (const s of doc.steps) {
    if (typeof s.node === 'string') ids.push(s.node);
    else if (s.node !== null && typeof s.node === 'object') ids.push((s.node as { id: string }).id);
  }
  return ids;
}

describe('shipped scenarios with hostile node ids', () => {
  const files = readdirSync('scenarios').filter((f) => f.endsWith('.json'));
  it.each(files)('%s holds every expectation, and the same ones, with its nodes renamed', (name) => {
    const file = join('scenarios', name);
    const doc = JSON.parse(readFileSync(file, 'utf8')) as { topology?: unknown; steps: { node?: unknown }[] };
    const topologyFile = typeof doc.topology === 'string' ? join(dirname(file), doc.topology) : undefined;
    const fileTopology = topologyFile === undefined ? undefined : (JSON.parse(readFileSync(topologyFile, 'utf8')) as { nodes: { id: string }[] });
    const map = renaming(scenarioNodeIds(doc, fileTopology));
    const run = (text: string, topologyText: string | undefined) => {
      const loaded = loadScenario(text, file, (_ref, options) => loadTopology(topologyText ?? '', topologyFile ?? '', options));
      if (!loaded.ok) throw loaded.error;
      return runScenario(loaded.value);
    };
    const plain = run(JSON.stringify(doc), fileTopology === undefined ? undefined : JSON.stringify(fileTopology));
    const hostile = run(JSON.stringify(renameValues(doc, map)), fileTopology === undefined ? undefined : JSON.stringify(renameValues(fileTopology, map)));
    const back = new Map([...map].map(([a, b]) => [b, a]));
    expect(hostile.steps.flatMap((s) => s.expectations.filter((e) => !e.pass))).toEqual([]);
    // Every expectation, its verdict and the value it checked, renamed back, are the plain run's.
    expect(renameBack(hostile.steps, back)).toEqual(JSON.parse(JSON.stringify(plain.steps)));
  });
});

describe('swarm-sim with hostile node ids', () => {
  const text = readFileSync('examples/swarm.json', 'utf8');
  const doc = JSON.parse(text) as { nodes: { id: string }[] };
  const load = (t: string): Topology => {
    const r = loadTopology(t, 'examples/swarm.json', { pipelines: 2 });
    if (!r.ok) throw r.error;
    return r.value;
  };

  it.each(['gpu', 'laptop', 'phone'])('killing %s gives the same report as with the ordinary ids, renamed', (kill) => {
    const map = renaming(doc.nodes.map((n) => n.id));
    const hostileKill = map.get(kill) as string;
    // The newcomer is the killed node's twin, `<kill>-2`: renamed with it.
    map.set(`${kill}-2`, `${hostileKill}-2`);
    const plain = runSwarmSim(load(text), { kill, seed: 1, retire: 'desktop' });
    const hostile = runSwarmSim(load(JSON.stringify(renameValues(doc, map))), { kill: hostileKill, seed: 1, retire: map.get('desktop') as string });
    // Messages quote ids inside sentences: those occurrences are renamed back too.
    expect(renameBack(hostile, new Map([...map].map(([a, b]) => [b, a])))).toEqual(JSON.parse(JSON.stringify(plain)));
    expect(plain.steps.map((s) => s.status)).toContain('degraded');
  });
});
