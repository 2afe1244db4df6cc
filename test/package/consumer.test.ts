/**
 * The package as a user gets it: `npm pack`, installed from the tarball into a fresh project on
 * another xstate 5.x minor, type-checked with strict `nodenext` TypeScript and run. Also the
 * package linters (publint --strict, arethetypeswrong) on the same tarball. Uses npm's cache
 * (`--prefer-offline`), so only a cold cache reaches the registry.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repo = resolve(import.meta.dirname, '../..');
/**
 * The consumers' xstate: the bottom of the peer range (another minor than the repository's pin,
 * and the one the declarations are emitted against) and the newest the repository tests.
 */
const REPO_XSTATE = (JSON.parse(readFileSync(join(repo, 'node_modules/xstate/package.json'), 'utf8')) as { version: string }).version;
const PEER_FLOOR = ((JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { peerDependencies: Record<string, string> }).peerDependencies['xstate'] ?? '').replace(/^\^/, '');
const CONSUMER_XSTATES = [PEER_FLOOR, REPO_XSTATE];
const ZOD = (JSON.parse(readFileSync(join(repo, 'node_modules/zod/package.json'), 'utf8')) as { version: string }).version;
const tsc = join(repo, 'node_modules/typescript/bin/tsc');
const npm = (args: string[], cwd: string) => execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

let dir = '';
let tarball = '';

/** Every installed package.json of `name` under a node_modules tree. */
function copiesOf(root: string, name: string): string[] {
  const found: string[] = [];
  const walk = (nm: string) => {
    if (!existsSync(nm)) return;
    for (const entry of readdirSync(nm)) {
      const path = join(nm, entry);
      if (entry.startsWith('@')) {
        for (const sub of readdirSync(path)) visit(`${entry}/${sub}`, join(path, sub));
      } else visit(entry, path);
    }
  };
  const visit = (pkg: string, path: string) => {
    if (!statSync(path).isDirectory()) return;
    if (pkg === name) found.push(join(path, 'package.json'));
    walk(join(path, 'node_modules'));
  };
  walk(join(root, 'node_modules'));
  return found;
}

const CONSUMER_TS = `import { createActor } from 'xstate';
import { createSwarm, swarmConfig, SwarmError, type NodeProfile, type Route, type SwarmActor, type SwarmContract } from 'hecate-swarm';
import { nodeMachine, provideSwarm, type SwarmContext } from 'hecate-swarm/machines';
import { topologyFromValue } from 'hecate-swarm/sim';
import { ManualClock } from 'hecate-swarm';
import { createSessionSwarm, type StageRunner } from 'hecate-swarm/sessions';
import { persistSwarm, restoreSwarm, swarmDigest } from 'hecate-swarm/persistence';
import { prefixCache } from 'hecate-swarm/prefix';

const profiles: NodeProfile[] = [
  { id: 'a', memoryGb: 8, score: 2 },
  { id: 'b', memoryGb: 8, score: 1 },
];
const swarm = createSwarm(profiles, swarmConfig(4, 2), { seed: 1, clock: new ManualClock() });
const handle: SwarmActor = swarm.actor;
const contract: SwarmContract<'now'> = swarm;
const context: SwarmContext = handle.getSnapshot().context;
const alone = createActor(provideSwarm(), { snapshot: swarm.actor.getPersistedSnapshot() } as never);
const node = createActor(nodeMachine, { input: { id: 'solo' } }).start();
node.send({ type: 'node.telemetry', sample: { load: 0.5 } });
const route: Route = swarm.route({ tokens: 16 });
let refused = '';
try {
  swarm.report('a', { latency: 9 } as never);
} catch (error) {
  if (error instanceof SwarmError) refused = error.code;
}
const topology = topologyFromValue({ models: [{ id: 'm', layers: 2 }], nodes: [{ id: 'x', memoryGb: 4 }] }, 'inline');
const restored = restoreSwarm(profiles, swarmConfig(4, 2), persistSwarm(swarm));
const sameDigest = swarmDigest(restored) === swarmDigest(swarm);
restored.stop();
const prefixed = createSwarm(profiles, swarmConfig(4, 2), { seed: 1, prefixCache: prefixCache({ tokenWeight: 1 }) });
prefixed.route({ prompt: 'x'.repeat(256) });
const cached = prefixed.route({ prompt: 'x'.repeat(256) }).cachedTokens;
prefixed.stop();
const withSessions = createSessionSwarm(profiles, swarmConfig(4, 2), { seed: 1 });
const addOne: StageRunner<number> = async (stage, x) => x + stage.layerEnd - stage.layerStart;
void withSessions.execute({ tokens: 1 }, 1, addOne).then((executed) => {
  withSessions.stop();
  console.log(JSON.stringify({ status: swarm.status(), any: handle.id === swarm.actor.id && contract.status() === 'healthy' && context.members.size === 2 && alone.getSnapshot().status === 'active', load: node.getSnapshot().context.load, stages: route.stages.length, refused, topology: topology.ok, sameDigest, executed, cached }));
  swarm.stop();
  node.stop();
});
`;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'hecate-consumer-'));
  const packed = JSON.parse(npm(['pack', '--ignore-scripts', '--json', '--pack-destination', dir], repo)) as { filename: string }[];
  tarball = join(dir, packed[0]?.filename ?? '');
}, 120_000);

afterAll(() => {
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

/** A fresh consumer project on `xstate`, with the tarball installed. */
function makeConsumer(xstate: string): string {
  const consumer = join(dir, `consumer-${xstate}`);
  mkdirSync(consumer);
  writeFileSync(
    join(consumer, 'package.json'),
    // zod: the documented peer of `hecate-swarm/sim`, which the consumer imports.
    JSON.stringify({ name: 'consumer', private: true, type: 'module', dependencies: { xstate, zod: ZOD, 'hecate-swarm': `file:${tarball}` } }, null, 2),
  );
  writeFileSync(
    join(consumer, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', types: [], skipLibCheck: false, noUncheckedIndexedAccess: true, verbatimModuleSyntax: true, outDir: 'out' }, include: ['index.ts'] }),
  );
  writeFileSync(join(consumer, 'index.ts'), CONSUMER_TS);
  npm(['install', '--prefer-offline', '--ignore-scripts'], consumer);
  return consumer;
}

describe('the packed package', () => {
  it('ships the build, the examples, the scenarios, the documents, the LICENSE, and nothing else', () => {
    const files = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).trim().split('\n').map((f) => f.replace(/^package\//, ''));
    expect(files).toContain('LICENSE');
    expect(files).toContain('dist/src/index.js');
    expect(files).toContain('dist/src/sim/index.d.ts');
    expect(files).toContain('dist/src/testing/index.d.ts');
    expect(files).toContain('dist/src/sessions/index.d.ts');
    expect(files).toContain('dist/src/persistence/index.d.ts');
    expect(files).toContain('dist/src/prefix/index.d.ts');
    expect(files.filter((f) => f.startsWith('dist/bench') || f.endsWith('.map'))).toEqual([]);
    expect(files).toContain('docs/install.md');
    expect(files.filter((f) => !/^(dist\/(src|machines)\/|examples\/|scenarios\/|docs\/|bench\/load-sim\/|LICENSE$|README\.md$|CHANGELOG\.md$|package\.json$)/.test(f))).toEqual([]);
  });

  it('every relative link of its Markdown (README.md, docs/, CHANGELOG.md) reaches a file it ships', () => {
    const files = new Set(execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).trim().split('\n').map((f) => f.replace(/^package\//, '')));
    const dead: string[] = [];
    for (const doc of [...files].filter((f) => f.endsWith('.md'))) {
      const text = readFileSync(join(repo, doc), 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = (m[1] as string).split('#')[0] as string;
        if (target === '' || /^[a-z]+:/.test(target)) continue; // an anchor in the same file, or a URL
        const path = join(doc, '..', target).split('\\').join('/');
        if (!files.has(path)) dead.push(`${doc} → ${m[1]}`);
      }
    }
    expect(dead).toEqual([]);
  });

  it('has no install script: the manifest a consumer installs has no preinstall, install, postinstall or prepare', () => {
    const manifest = JSON.parse(execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' })) as { scripts?: Record<string, string> };
    expect(Object.keys(manifest.scripts ?? {}).filter((k) => ['preinstall', 'install', 'postinstall', 'prepare'].includes(k))).toEqual([]);
  });

  it('the repository still builds on its own npm ci and npm install, and before npm pack: npm runs these scripts of the package.json (build replaced by a marker)', () => {
    const { scripts } = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const checkout = join(dir, 'checkout');
    mkdirSync(checkout);
    const marker = "node -e \"require('fs').appendFileSync('built', process.env.npm_lifecycle_event + '\\n')\"";
    const lifecycle = Object.fromEntries(Object.entries(scripts).filter(([k]) => /^(pre|post)?(install|prepare|pack|publish|dependencies)$/.test(k)));
    writeFileSync(join(checkout, 'package.json'), JSON.stringify({ name: 'checkout', version: '1.0.0', scripts: { ...lifecycle, build: marker } }));
    const built = () => (existsSync(join(checkout, 'built')) ? readFileSync(join(checkout, 'built'), 'utf8').trim().split('\n') : []);
    npm(['install', '--offline'], checkout);
    expect(built()).toEqual(['build']);
    npm(['ci', '--offline'], checkout);
    expect(built()).toEqual(['build', 'build']);
    npm(['pack', '--dry-run'], checkout);
    expect(built()).toEqual(['build', 'build', 'build']);
  }, 60_000);

  it.each(CONSUMER_XSTATES)('in a project on xstate %s: one copy of xstate, no CLI-only package (zod added: the sim entry needs it), strict nodenext type-checks swarm.actor, swarmMachine and nodeMachine, and it runs', (xstate) => {
    expect(PEER_FLOOR).not.toBe(REPO_XSTATE);
    const consumer = makeConsumer(xstate);
    const xstates = copiesOf(consumer, 'xstate').map((p) => (JSON.parse(readFileSync(p, 'utf8')) as { version: string }).version);
    expect(xstates).toEqual([xstate]);
    for (const absent of ['ws', '@statelyai/inspect', 'fastify', 'prom-client', 'light-my-request', '@nats-io/transport-node', 'superjson']) expect(copiesOf(consumer, absent)).toEqual([]);
    const typecheck = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: consumer, encoding: 'utf8' });
    expect(typecheck.stdout + typecheck.stderr).toBe('');
    const out = execFileSync(process.execPath, ['out/index.js'], { cwd: consumer, encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual({ status: 'healthy', any: true, load: 0.5, stages: 1, refused: 'BadTelemetry', topology: true, sameDigest: true, executed: 5, cached: 64 });
  }, 180_000);

  it('is clean for publint --strict and arethetypeswrong (ESM-only profile)', () => {
    const publint = execFileSync(process.execPath, [join(repo, 'node_modules/publint/src/cli.js'), '--strict', repo], { cwd: repo, encoding: 'utf8' });
    expect(publint).toMatch(/All good!/);
    // ESM only: node10 and require() from CommonJS are out of scope (docs/design.md §11); every
    // other resolution must be green. A problem in scope makes attw exit non-zero.
    const attw = spawnSync(process.execPath, [join(repo, 'node_modules/@arethetypeswrong/cli/dist/index.js'), tarball, '--profile', 'esm-only', '--format', 'ascii'], { cwd: repo, encoding: 'utf8' });
    expect(attw.status).toBe(0);
    const inScope = attw.stdout.split('\n').filter((line) => /^(node16 \(from ESM\)|bundler):/.test(line));
    const entries = Object.keys((JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { exports: Record<string, unknown> }).exports);
    expect(entries).toContain('./replication');
    expect(entries).toContain('./prefix');
    expect(entries).toContain('./examples/swarm.json');
    expect(inScope).toHaveLength(entries.length * 2); // every entry, under both resolutions
    expect(inScope.filter((line) => !line.includes('🟢'))).toEqual([]);
  });
});
