import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from './run-cli.js';

// `npm test` builds first (pretest); in a manual run, `npm run build` before vitest.
const SEED_COMMAND = ['swarm-sim', '--topology', 'examples/swarm.json', '--kill', 'gpu', '--pipelines', '2'];

const tmp = mkdtempSync(join(tmpdir(), 'hecate-cli-'));
function file(name: string, content: string): string {
  const path = join(tmp, name);
  writeFileSync(path, content);
  return path;
}

interface Step {
  step: string;
  status: string;
  route: { modelId: string; pipelineId: string; stages: { nodeId: string }[]; cost: number; degraded: boolean } | null;
  [k: string]: unknown;
}

describe.concurrent('hecate-node swarm-sim', () => {
  it("prints one JSON document for the original design's command: failover avoids gpu, growth adds a node, plan valid", async () => {
    const r = await cli(...SEED_COMMAND);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { steps: Step[]; planValid: boolean; kill: string };
    expect(doc.planValid).toBe(true);
    expect(doc.kill).toBe('gpu');
    const byName = new Map(doc.steps.map((s) => [s.step, s]));
    expect([...byName.keys()]).toEqual(expect.arrayContaining(['start', 'failover', 'growth']));
    const start = byName.get('start')!;
    expect(start.status).toBe('healthy');
    expect(start.route?.stages.map((s) => s.nodeId)).toContain('gpu');
    const failover = byName.get('failover')!;
    expect(failover.status).toBe('degraded');
    expect(failover.route?.stages.map((s) => s.nodeId)).not.toContain('gpu');
    expect(failover.route?.degraded).toBe(false);
    expect((failover['recovery'] as { strategy: string }).strategy).toBe('copy');
    const growth = byName.get('growth')!;
    expect(growth['added']).toMatchObject({ id: 'gpu-2' });
    expect(growth['role']).toBe('restore'); // six nodes, six disjoint copies: the twin restores the lost one
    for (const s of doc.steps) {
      expect(typeof s.status).toBe('string');
      expect(s.route).toMatchObject({ modelId: 'hecate-8b', degraded: false });
    }
  });

  it('prints byte-identical output for the same --seed', async () => {
    const [a, b] = await Promise.all([cli(...SEED_COMMAND, '--seed', '7'), cli(...SEED_COMMAND, '--seed', '7')]);
    expect(a.code).toBe(0);
    expect(a.stdout.length).toBeGreaterThan(0);
    expect(b.stdout).toBe(a.stdout);
  });

  it('reports a retire step with its relocations when asked', async () => {
    const r = await cli(...SEED_COMMAND, '--seed', '1', '--retire', 'laptop', '--add', 'workstation:32:12:5');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { steps: Step[]; planValid: boolean };
    expect(doc.steps.map((s) => s.step)).toEqual(['start', 'failover', 'growth', 'revive', 'retire']);
    const retire = doc.steps[4]!;
    expect(retire['retired']).toBe('laptop');
    expect(retire.route?.stages.map((s) => s.nodeId)).not.toContain('laptop');
    expect(doc.planValid).toBe(true);
  });

  it('answers --help', async () => {
    const r = await cli('swarm-sim', '--help');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: hecate-node swarm-sim/);
    expect(r.stdout).toContain('--pipelines');
  });
});

describe.concurrent('hecate-node bad input: exit 2, one line on stderr, nothing on stdout', () => {
  const dup = file('dup.json', JSON.stringify({ models: [{ id: 'base', layers: 4 }], nodes: [{ id: 'a', memoryGb: 4 }, { id: 'a', memoryGb: 4 }] }));
  const small = file('small.json', JSON.stringify({ models: [{ id: 'base', layers: 40 }], nodes: [{ id: 'a', memoryGb: 4 }, { id: 'b', memoryGb: 4 }] }));
  const negative = file('negative.json', JSON.stringify({ models: [{ id: 'base', layers: 4 }], nodes: [{ id: 'a', memoryGb: -4 }] }));
  const broken = file('broken.json', '{ "models": [ { "id": "base", ');
  const badScenario = file('bad-scenario.json', JSON.stringify({ name: 'x', topology: { models: [{ id: 'base', layers: 4 }], nodes: [{ id: 'a', memoryGb: 4 }] }, steps: [{ step: 'explode' }] }));
  const cases: [string, string[], RegExp][] = [
    ['a missing file', ['swarm-sim', '--topology', join(tmp, 'missing.json')], /missing\.json: cannot read file: no such file/],
    ['invalid JSON', ['swarm-sim', '--topology', broken], /broken\.json: invalid JSON/],
    ['duplicate node ids', ['swarm-sim', '--topology', dup], /dup\.json: \$\.nodes\[1\]\.id: duplicate node id "a"/],
    ['an impossible capacity', ['swarm-sim', '--topology', small], /small\.json: \$\.models\[0\]: impossible capacity: .*"base"/],
    ['a negative memory', ['swarm-sim', '--topology', negative], /negative\.json: \$\.nodes\[0\]\.memoryGb: must be >= 0/],
    ['too many copies for the memory', [...SEED_COMMAND.slice(0, 5), '--pipelines', '9'], /swarm\.json: \$\.models\[0\]: impossible capacity/],
    ['--kill of an unknown node', ['swarm-sim', '--topology', 'examples/swarm.json', '--kill', 'toaster'], /--kill: unknown node "toaster" in examples\/swarm\.json/],
    ['an unknown flag', [...SEED_COMMAND, '--frobnicate'], /unknown flag --frobnicate/],
    ['a flag without its value', ['swarm-sim', '--topology'], /flag --topology needs a value/],
    ['a missing required flag', ['swarm-sim', '--kill', 'gpu'], /missing required flag --topology/],
    ['a bad --pipelines', [...SEED_COMMAND.slice(0, 5), '--pipelines', 'two'], /flag --pipelines: must be an integer, got "two"/],
    ['a bad --add', [...SEED_COMMAND, '--add', 'x:lots'], /flag --add memoryGb/],
    ['an unknown command', ['swarm-simulate'], /unknown command "swarm-simulate"/],
    ['a scenario with an unknown step', ['scenario', badScenario], /bad-scenario\.json: \$\.steps\[0\]\.step: /],
    ['a scenario command without files', ['scenario'], /no scenario file or name given/],
    ['a scenario name the package does not ship', ['scenario', 'nope'], /no shipped scenario "nope" .*shipped: copy-failover, /],
  ];
  it.each(cases)('%s', async (_name, args, message) => {
    const r = await cli(...args);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  });
});

describe.concurrent('hecate-node scenario', () => {
  const shipped = readdirSync('scenarios')
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => join('scenarios', f));

  it('ships a scenario for every behaviour of the original design', () => {
    expect(shipped.length).toBeGreaterThanOrEqual(9);
  });

  it('passes every shipped scenario, reporting each one', async () => {
    const r = await cli('scenario', '--json', ...shipped);
    expect(r.stderr).toBe('');
    const doc = JSON.parse(r.stdout) as { pass: boolean; scenarios: { file: string; pass: boolean; steps: { expectations: { pass: boolean; name: string }[] }[] }[] };
    const failures = doc.scenarios.flatMap((s) => s.steps.flatMap((st) => st.expectations.filter((e) => !e.pass).map((e) => `${s.file}: ${e.name}`)));
    expect(failures).toEqual([]);
    expect(doc.scenarios.map((s) => s.file)).toEqual(shipped);
    expect(r.code).toBe(0);
  });

  it('prints a text report and exits 0 when every expectation holds', async () => {
    const r = await cli('scenario', 'scenarios/splice.json');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^PASS per-layer splice/);
    expect(r.stdout).toContain('✓ recovery.strategy: splice');
  });

  it('exits 1 and names each failed expectation', async () => {
    const wrong = file(
      'wrong.json',
      JSON.stringify({
        name: 'wrong on purpose',
        topology: { models: [{ id: 'base', layers: 4, pipelines: 2 }], nodes: [{ id: 'a', memoryGb: 4 }, { id: 'b', memoryGb: 4 }] },
        steps: [{ step: 'kill', node: 'a', expect: { status: 'healthy', strategy: 'copy' } }],
      }),
    );
    const r = await cli('scenario', wrong);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^FAIL wrong on purpose/);
    expect(r.stdout).toContain('✗ status: expected healthy, got degraded');
    expect(r.stdout).toContain('✓ recovery.strategy: copy');
  });

  it('answers --help, as does the top level', async () => {
    const r = await cli('scenario', '--help');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: hecate-node scenario/);
    const top = await cli('--help');
    expect(top.code).toBe(0);
    expect(top.stdout).toContain('swarm-sim');
    expect(top.stdout).toContain('scenario');
  });
});
