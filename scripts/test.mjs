// `npm test`: provisions what the tests run besides Node (scripts/provision.mjs: Chromium for
// the HTML report test), runs vitest, keeps its exit code, and prints the plain closing line CI
// reads: "N passed, N failed".
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { provision, REQUIREMENTS } from './provision.mjs';

let env;
try {
  env = provision(REQUIREMENTS);
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  console.log('0 passed, 1 failed');
  process.exit(1);
}

const out = '.test-results.json';
rmSync(out, { force: true });
const args = ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${out}`, ...process.argv.slice(2)];
const run = spawnSync('npx', args, { stdio: 'inherit', env });
let passed = 0;
let failed = run.status === 0 ? 0 : 1;
if (existsSync(out)) {
  const report = JSON.parse(readFileSync(out, 'utf8'));
  passed = report.numPassedTests ?? 0;
  // A test file that fails to load has no test results of its own: count it as one failure.
  const brokenFiles = (report.testResults ?? []).filter((f) => f.status === 'failed' && (f.assertionResults ?? []).length === 0).length;
  failed = (report.numFailedTests ?? 0) + brokenFiles;
}
if (run.status !== 0 && failed === 0) failed = 1; // e.g. an unhandled error outside any test
console.log(`${passed} passed, ${failed} failed`);
process.exit(run.status ?? 1);
