import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: [
      'common/**/*.test.ts',
      'services/**/*.test.ts',
      'main/**/*.test.ts',
      'renderer/**/*.test.ts',
      'test/**/*.test.ts',
    ],
    // npm run mutate's sandboxes (copies of these very tests) and reports.
    exclude: [...configDefaults.exclude, '.stryker-tmp/**', 'reports/**'],
    // Builds what changed (main/build/) once per run: tests run the app as `npm run build` leaves it.
    globalSetup: ['main/build/test-setup.ts'],
    // electron-store loads `electron`; inlined, it gets a test's stand-in for Electron (main/electron/settings.test.ts).
    server: { deps: { inline: ['electron-store'] } },
    // Backstops only (tests wait for events): a full run beside another on two cores took 4x a quiet one's time.
    testTimeout: 240_000,
    hookTimeout: 240_000,
    // Services bind real ports and spawn real processes; files run in parallel workers, tests inside a file in order.
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
  },
});
