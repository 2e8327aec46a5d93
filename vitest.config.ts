import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['services/**/*.test.ts', 'main/**/*.test.ts', 'renderer/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Services bind real ports and spawn real processes; files run in parallel workers, tests inside a file in order.
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
  },
});
