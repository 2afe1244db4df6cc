// `npm test` (scripts/test.mjs): every file, in two projects: "processes", the files that start
// processes, servers or a browser, each in its own worker; "unit", the in-process files without a
// fresh worker each (as `test:fast` runs them, vitest.fast.config.ts). Vitest orders files by
// project name, then by duration (its cache) or size: the processes' long waits start first, and
// the short in-process files fill the workers around them.
import { defineConfig } from 'vitest/config';
import { IN_PROCESS, SHARED, SLOW_TESTS } from './vitest.fast.config.js';

/** SLOW_TESTS' folders as their test files (a folder's helpers are not tests). */
const slowFiles = SLOW_TESTS.map((glob) => (glob.endsWith('/**') ? `${glob}/*.test.ts` : glob));

export default defineConfig({
  test: {
    ...SHARED,
    projects: [
      { extends: true, test: { name: 'unit', ...IN_PROCESS } },
      { extends: true, test: { name: 'processes', include: slowFiles } },
    ],
  },
});
