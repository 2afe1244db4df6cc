import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NODE_LLAMA_CPP_DIR, NODE_LLAMA_CPP_VERSION, provision, REQUIREMENTS, type Requirement } from '../../scripts/provision.mjs';

const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A requirement for a fake program `fake-tool` whose installer writes it into `bin`. */
function fakeWorld(installerWorks: boolean): { req: Requirement; bin: string; log: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'hecate-provision-'));
  made.push(dir);
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  const installer = join(dir, 'install.sh');
  writeFileSync(installer, installerWorks ? `#!/bin/sh\nprintf '#!/bin/sh\\necho fake\\n' > "${bin}/fake-tool"\n/bin/chmod +x "${bin}/fake-tool"\n` : '#!/bin/sh\necho "no package index" >&2\nexit 100\n');
  chmodSync(installer, 0o755);
  return { req: { name: 'fake-tool', env: 'FAKE_TOOL', binaries: ['fake-tool'], places: [join(bin, 'fake-tool')], install: ['/bin/sh', installer] }, bin, log: [] };
}

describe('scripts/provision.mjs', () => {
  it('installs a missing program, then hands its path to the test run', () => {
    const { req, bin, log } = fakeWorld(true);
    const env = provision([req], { env: { PATH: '/nowhere' }, log: (l) => log.push(l) });
    expect(env['FAKE_TOOL']).toBe(join(bin, 'fake-tool'));
    expect(existsSync(join(bin, 'fake-tool'))).toBe(true);
    expect(log[0]).toMatch(/fake-tool is missing; installing it/);
  });

  it('runs no installer when the program is on PATH', () => {
    const { req, bin, log } = fakeWorld(false); // an installer that would fail
    writeFileSync(join(bin, 'fake-tool'), '#!/bin/sh\n');
    chmodSync(join(bin, 'fake-tool'), 0o755);
    const env = provision([{ ...req, places: [] }], { env: { PATH: bin }, log: (l) => log.push(l) });
    expect(env['FAKE_TOOL']).toBe(join(bin, 'fake-tool'));
    expect(log).toEqual([]);
  });

  it('stops the test run, naming the program, when it cannot be installed', () => {
    const { req } = fakeWorld(false);
    expect(() => provision([req], { env: { PATH: '/nowhere' }, log: () => {} })).toThrow(/could not install fake-tool .*exit code 100.*set FAKE_TOOL=/);
  });

  it('provisions Chromium through Debian\'s package when it is missing', () => {
    const chromium = REQUIREMENTS.find((r) => r.name === 'chromium');
    expect(chromium?.env).toBe('CHROMIUM');
    expect(chromium?.install).toEqual(['bash', 'scripts/ensure-chromium.sh']);
  });

  it('provisions nats-server (JetStream, for the replication tests) through Debian\'s package when it is missing', () => {
    const nats = REQUIREMENTS.find((r) => r.name === 'nats-server');
    expect(nats?.env).toBe('NATS_SERVER');
    expect(nats?.places).toContain('/usr/sbin/nats-server');
    expect(nats?.install).toEqual(['bash', 'scripts/ensure-nats-server.sh']);
    expect(existsSync('scripts/ensure-nats-server.sh')).toBe(true);
  });

  it('provisions node-llama-cpp (the engine\'s llama.cpp check) pinned, in a folder of its own outside the repository, never from PATH', () => {
    const llama = REQUIREMENTS.find((r) => r.name === 'node-llama-cpp');
    expect(llama?.env).toBe('NODE_LLAMA_CPP');
    expect(llama?.binaries).toEqual([]);
    expect(NODE_LLAMA_CPP_VERSION).toBe('3.21.1');
    expect(llama?.places).toEqual([join(NODE_LLAMA_CPP_DIR, 'node_modules', '.bin', 'node-llama-cpp')]);
    expect(NODE_LLAMA_CPP_DIR.startsWith(process.cwd())).toBe(false);
    expect(NODE_LLAMA_CPP_DIR).toMatch(/hecate-swarm[\\/]node-llama-cpp-3\.21\.1$/);
    expect(llama?.install).toEqual(['node', 'scripts/ensure-node-llama-cpp.mjs']);
    expect(existsSync('scripts/ensure-node-llama-cpp.mjs')).toBe(true);
  });
});
