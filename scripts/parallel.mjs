// Runs npm scripts at once and fails if any fails, printing each one's output whole when it ends
// (`npm test`'s pretest: the build and the type-check share no output, and on two cores they take
// the time of the longer instead of the sum).
import { spawn } from 'node:child_process';

const scripts = process.argv.slice(2);
const runs = scripts.map(
  (name) =>
    new Promise((done) => {
      const child = spawn('npm', ['run', '--silent', name], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (chunk) => (out += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk) => (out += chunk));
      child.once('error', (error) => done({ name, code: 1, out: `${out}${error.message}\n` }));
      child.once('close', (code) => done({ name, code: code ?? 1, out }));
    }),
);
let failed = 0;
for (const run of runs) {
  const { name, code, out } = await run;
  process.stdout.write(`> npm run ${name}: ${code === 0 ? 'ok' : `exit ${code}`}\n${out}`);
  if (code !== 0) failed += 1;
}
process.exit(failed === 0 ? 0 : 1);
