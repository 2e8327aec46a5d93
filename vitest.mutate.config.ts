import { configDefaults, defineConfig } from 'vitest/config';

/**
 * The tests `npm run mutate` (stryker.config.mjs) runs against each mutant: the unit tests of the modules it
 * mutates, which call them in this process (a child process's code is not the mutant). No build first
 * (unlike vitest.config.ts): none of these tests starts the app's bundles.
 */
export default defineConfig({
  test: {
    include: [
      'common/url-path.test.ts',
      'common/secret-formats.test.ts',
      'services/kit/host-check.test.ts',
      'services/kit/*.rules.test.ts',
      'services/kit/identity-keys.test.ts',
      'services/kit/identity-channel.test.ts',
      'services/repohost-gateway/signal-addresses.test.ts',
      'services/persona-store/credential-screen.rules.test.ts',
      'services/persona-store/field-key.test.ts',
      'services/model-provider/invocation.test.ts',
    ],
    exclude: [...configDefaults.exclude, '.stryker-tmp/**', 'reports/**'],
    testTimeout: 240_000,
    hookTimeout: 240_000,
    pool: 'forks',
    reporters: ['default'],
  },
});
