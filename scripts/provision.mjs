// Provisions the programs the test suite runs besides Node (Debian's Chromium and nats-server, and
// llama.cpp through node-llama-cpp for the engine's independent check), so that
// `npm test` passes on a fresh machine with nothing installed by hand. `node scripts/test.mjs`
// calls it before vitest; run it alone with `node scripts/provision.mjs [name...]`.
//
// Each requirement names the program, the environment variable that may point at it, the
// binaries to look for, and the script that installs it when it is missing. Once found, the
// program's absolute path is put in that variable for the test run, so a test finds it even
// when the installer put it outside PATH. A program that cannot be provisioned stops the test
// run with a message saying what to do: no test skips for want of it.
//
// Adding a program is one entry in REQUIREMENTS plus its install script.
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The pinned node-llama-cpp (732 MB with its prebuilt llama.cpp binaries: kept out of the devDependencies). */
export const NODE_LLAMA_CPP_VERSION = '3.21.1';

/** Where node-llama-cpp is installed, outside the repository, once per machine and version. */
export const NODE_LLAMA_CPP_DIR = join(process.env['XDG_CACHE_HOME'] || join(homedir(), '.cache'), 'hecate-swarm', `node-llama-cpp-${NODE_LLAMA_CPP_VERSION}`);

/**
 * @typedef {object} Requirement
 * @property {string} name what it is, as printed
 * @property {string} env the environment variable that may hold its path, set once it is found
 * @property {string[]} binaries the names to look for on PATH, in order
 * @property {string[]} places absolute paths to look at when PATH has none (where the installer puts it)
 * @property {string[]} install the command (program and arguments, run from the repository root) that installs it
 */

/** @type {Requirement[]} */
export const REQUIREMENTS = [
  {
    name: 'chromium',
    env: 'CHROMIUM',
    binaries: ['chromium', 'chromium-browser', 'google-chrome'],
    places: ['/usr/bin/chromium', '/usr/lib/chromium/chromium'],
    install: ['bash', 'scripts/ensure-chromium.sh'],
  },
  {
    name: 'nats-server',
    env: 'NATS_SERVER',
    binaries: ['nats-server'],
    places: ['/usr/sbin/nats-server', '/usr/bin/nats-server'],
    install: ['bash', 'scripts/ensure-nats-server.sh'],
  },
  {
    // Not looked for on PATH: only the pinned version, in its own folder, will do.
    name: 'node-llama-cpp',
    env: 'NODE_LLAMA_CPP',
    binaries: [],
    places: [join(NODE_LLAMA_CPP_DIR, 'node_modules', '.bin', 'node-llama-cpp')],
    install: ['node', 'scripts/ensure-node-llama-cpp.mjs'],
  },
];

/** True when `path` is an executable file. */
function executable(path) {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The absolute path of a requirement's program: the variable if it is set and executable, else
 * the first binary on PATH, else the first known place; `undefined` when there is none.
 * @param {Requirement} req
 * @param {NodeJS.ProcessEnv} env
 * @returns {string | undefined}
 */
export function locate(req, env) {
  const override = env[req.env];
  if (override !== undefined && override !== '' && executable(override)) return override;
  const dirs = (env['PATH'] ?? '').split(delimiter).filter((d) => d !== '');
  for (const binary of req.binaries) for (const dir of dirs) if (executable(join(dir, binary))) return join(dir, binary);
  return req.places.find(executable);
}

/**
 * Makes sure every requirement is there, installing what is missing, and returns the
 * environment to run the tests with (each requirement's variable set to its path).
 * @param {readonly Requirement[]} requirements
 * @param {{ env?: NodeJS.ProcessEnv, cwd?: string, log?: (line: string) => void }} [options]
 * @returns {NodeJS.ProcessEnv}
 * @throws {Error} naming the requirement when it is missing and its installer fails or leaves it missing
 */
export function provision(requirements, options = {}) {
  const env = { ...(options.env ?? process.env) };
  const log = options.log ?? ((line) => console.error(line));
  for (const req of requirements) {
    let path = locate(req, env);
    if (path === undefined) {
      log(`provision: ${req.name} is missing; installing it with: ${req.install.join(' ')}`);
      const [program, ...args] = req.install;
      const run = spawnSync(program, args, { cwd: options.cwd ?? root, env, stdio: ['ignore', 'inherit', 'inherit'] });
      if (run.error !== undefined || run.status !== 0) {
        const why = run.error !== undefined ? run.error.message : `exit code ${String(run.status)}`;
        throw new Error(`provision: could not install ${req.name} (${req.install.join(' ')}: ${why}); install it and put it on PATH, or set ${req.env}=/path/to/${req.binaries[0] ?? req.name}`);
      }
      path = locate(req, env);
      if (path === undefined) throw new Error(`provision: ${req.install.join(' ')} succeeded but ${req.name} is still not found (looked on PATH for ${req.binaries.join(', ')} and at ${req.places.join(', ')}); set ${req.env}=/path/to/${req.binaries[0] ?? req.name}`);
      log(`provision: ${req.name} installed at ${path}`);
    }
    env[req.env] = path;
  }
  return env;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const names = process.argv.slice(2);
  const unknown = names.filter((n) => !REQUIREMENTS.some((r) => r.name === n));
  if (unknown.length > 0) {
    console.error(`provision: unknown requirement ${unknown.join(', ')} (known: ${REQUIREMENTS.map((r) => r.name).join(', ')})`);
    process.exit(2);
  }
  try {
    const env = provision(names.length === 0 ? REQUIREMENTS : REQUIREMENTS.filter((r) => names.includes(r.name)));
    for (const req of REQUIREMENTS) if (env[req.env] !== undefined) console.log(`${req.env}=${env[req.env]}`);
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  }
}
