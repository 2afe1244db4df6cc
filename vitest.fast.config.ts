// `npm run test:fast`: the developer's loop. Every test but those that start a real process
// (the CLI as a child, nats-server, npm pack and install, shell scripts) or a browser, or that
// serve over real sockets and real time; `npm test` runs them all (README.md, "Two commands"),
// these as its "unit" project (vitest.config.ts). None of the tests left reads `dist/`
// (the package tests do), so it needs no build first.
import { configDefaults, defineConfig } from 'vitest/config';

/** What every run shares: `npm test` (vitest.config.ts) and `test:fast` (this file). */
export const SHARED = {
  testTimeout: 60_000,
  hookTimeout: 60_000,
  pool: 'forks',
  // Vitest's default is one worker less than the cores: one, on the 2-core machines CI runs on.
  // Most slow files wait on real processes and real time, not on a core: on 2 cores, npm test took
  // 7 min 9 s with one worker, 3 min 51 s with two and 3 min 20–36 s with three. (With three, the
  // flooded agent of edge-limits.test.ts once read +50 MB against its 50 MB bound when its 1,000
  // sessions came all at once; they come 32 at a time now, as what it keeps is the point.)
  maxWorkers: 3,
} as const;

/** The files `test:fast` leaves to `npm test`, each for the reason beside it. */
export const SLOW_TESTS = [
  'test/orchestrator/**', // orchestrators and agents: CLI processes, sockets, real time (the chaos file alone ~60 s)
  'test/conformance/**', // the conformance runner against agents over real sockets, and the CLI as a process
  'test/agent/agent-slots.test.ts', // agents over real sockets and real time
  'test/agent/session-drops.test.ts', // agents over real sockets and real time
  'test/net/**', // loopback servers and real time (their timeouts)
  'test/replication/**', // nats-server processes
  'test/package/**', // npm pack and npm install into fresh projects, the README walkthrough
  'test/cli/bounds.test.ts', // the CLI as a process (and a FIFO)
  'test/cli/chart.test.ts', // the CLI as a process
  'test/cli/cli.test.ts', // the CLI as a process
  'test/cli/inspect.test.ts', // the CLI as a process, a WebSocket server
  'test/cli/html-report.test.ts', // Chromium
  'test/docs/docs.test.ts', // every snippet of the documents in a Node process
  'test/examples.test.ts', // examples/lifecycle.mjs in a Node process
  'test/readme-chart.test.ts', // the CLI as a process
  'test/scripts/provision.test.ts', // installer shell scripts
  'test/agent/engines/llama-cpp.test.ts', // llama.cpp through node-llama-cpp (732 MB, provisioned on first run)
  'test/sim/load-cli.test.ts', // W1–W6 simulated whole through the CLI's code: the longest in-process file (~6 s)
];

/**
 * The in-process files, run without a fresh worker each (`isolate: false`): they share no process
 * state (no servers left open, no globals), and a worker's start and module transform per file was
 * about half their time.
 */
export const IN_PROCESS: { include: string[]; exclude: string[]; isolate: boolean } = { include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...SLOW_TESTS], isolate: false };

export default defineConfig({ test: { ...SHARED, ...IN_PROCESS } });
