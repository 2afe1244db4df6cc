// Installs the pinned node-llama-cpp (with its prebuilt CPU llama.cpp binaries) into a folder of
// its own outside the repository (scripts/provision.mjs: NODE_LLAMA_CPP_DIR), for the test that
// checks the reference engine's arithmetic against llama.cpp. It is 732 MB, so it is not a
// devDependency that every `npm ci` would fetch. scripts/provision.mjs runs it from `npm test`
// (and the test itself) when it is missing.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NODE_LLAMA_CPP_DIR, NODE_LLAMA_CPP_VERSION } from './provision.mjs';

mkdirSync(NODE_LLAMA_CPP_DIR, { recursive: true });
const manifest = join(NODE_LLAMA_CPP_DIR, 'package.json');
if (!existsSync(manifest)) writeFileSync(manifest, `${JSON.stringify({ name: 'hecate-swarm-node-llama-cpp', private: true }, null, 2)}\n`);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const run = spawnSync(npm, ['install', '--save-exact', '--no-audit', '--no-fund', `node-llama-cpp@${NODE_LLAMA_CPP_VERSION}`], { cwd: NODE_LLAMA_CPP_DIR, stdio: ['ignore', 'inherit', 'inherit'] });
if (run.error !== undefined || run.status !== 0) {
  console.error(`ensure-node-llama-cpp: npm install node-llama-cpp@${NODE_LLAMA_CPP_VERSION} in ${NODE_LLAMA_CPP_DIR} failed (${run.error?.message ?? `exit code ${String(run.status)}`})`);
  process.exit(1);
}
