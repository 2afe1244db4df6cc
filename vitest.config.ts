import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Vitest's default is one worker less than the cores: one, on the 2-core machines CI runs on.
    // Most slow files wait on real processes and real time, not on a core: two at once halve the wait.
    maxWorkers: 2,
  },
});
