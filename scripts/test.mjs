// Runs vitest, keeps its exit code, and prints the plain closing line CI reads: "N passed, N failed".
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';

const out = '.test-results.json';
rmSync(out, { force: true });
const args = ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${out}`, ...process.argv.slice(2)];
const run = spawnSync('npx', args, { stdio: 'inherit' });
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
