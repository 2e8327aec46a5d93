// @ts-check
/**
 * `npm run mutate`: StrykerJS changes the security modules' rules one at a time (an operator, a bound, an
 * anchor) and runs the tests related to each change (vitest.mutate.config.ts); a change no test notices is a
 * rule no test pins. Each module must keep at least 90 % of its mutants killed (test/support/mutation-scores.mjs
 * prints the table and fails the run below that). Kept out of `npm test` and CI: a run takes 15 to 25 minutes.
 */
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutate.config.ts', related: true },
  coverageAnalysis: 'perTest',
  mutate: [
    'common/url-path.ts',
    'common/secret-formats.ts',
    'services/kit/host-check.ts',
    'services/kit/verified-tokens.ts',
    'services/kit/auth.ts',
    'services/kit/identity-keys.ts',
    'services/kit/identity-trust.ts',
    'services/kit/identity-channel.ts',
    'services/repohost-gateway/signal-addresses.ts',
    'services/persona-store/credential-screen.ts',
    'services/persona-store/field-key.ts',
    'services/model-provider/invocation.ts',
  ],
  plugins: ['@stryker-mutator/vitest-runner', './test/support/mutation-scores.mjs'],
  reporters: ['progress-append-only', 'clear-text', 'html', 'json', 'module-scores'],
  htmlReporter: { fileName: 'reports/mutation/index.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  clearTextReporter: { allowColor: false, reportTests: false, reportMutants: false, reportScoreTable: true },
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
  // Two cores, shared: one test process per core.
  concurrency: 2,
  // A mutant that loops for ever is stopped after this (and 1.5 times its tests' own time); on a machine shared
  // with other work the default 5 s also stopped mutants that were merely slow, and each stop restarts a runner.
  timeoutMS: 10_000,
  thresholds: { high: 95, low: 90, break: null },
  ignorePatterns: ['out', 'dist', 'release', 'test-artifacts', 'reports', '.data', '.venv', 'docs/screenshots'],
};
