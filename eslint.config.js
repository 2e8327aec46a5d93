import { readdirSync } from 'node:fs';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Every folder of services/ but the kit is one service (one program). */
const SERVICES = readdirSync(new URL('./services/', import.meta.url), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && entry.name !== 'kit')
  .map((entry) => entry.name);

/** Tests, their support code and benchmarks may import anything: crossing layers is their job. */
const FREE = ['**/*.test.ts', '**/test-support/**', 'test/**', 'bench/**'];

const ELECTRON = {
  regex: '^(electron|electron-store)(/|$)|^@electron/|(^|/)electron/',
  message: 'Electron stays in main/electron/: this code also runs in plain Node (npm run serve, the tests).',
};
const RENDERER = {
  regex: '(^|/)renderer/',
  message: 'The renderer is a web page: reach it through the console API, never by import.',
};
const MAIN = {
  regex: '(^|/)main/',
  message:
    'Nothing of main/ is shared with this layer: shared facts live in common/ (the catalogue, states, contract).',
};
const A_SERVICE = {
  regex: `(^|/)services/(?!kit/)|(^|/)(${SERVICES.join('|')})/`,
  message: 'A service is a program of its own: talk to it over HTTP; shared facts live in common/.',
};
/**
 * A service's wire shapes: the one declaration of each answer, whose types its consumers take with `import type`
 * (nothing of it is bundled). The gateway's file is models.ts.
 */
const SHAPES = `(^|/)services/(${SERVICES.join('|')})/shapes\\.ts$`;
const SHAPE_TYPES = {
  regex: SHAPES,
  allowTypeImports: true,
  message:
    "Take a service's answer types with `import type` from its shapes file: its schemas and code stay out of this layer.",
};
/** The console's answers that carry a service's shape: the page takes their types too, nothing else of main/. */
const CONSOLE_ANSWERS = {
  regex: '(^|/)main/console/answers\\.ts$',
  allowTypeImports: true,
  message:
    "The page takes the console's answer types with `import type` from main/console/answers.ts; everything else comes through the console API.",
};

/**
 * Each layer's imports, in its lane (no-restricted-imports matches the import's text, relative paths included):
 * common/ imports nothing; the renderer's page only common/ (and types from the services' shapes and the console's
 * answers); the kit no service, nothing of main/ and not common/; a service the kit, common/ and itself; the
 * supervisor no Electron and no renderer; the console no Electron and of a service only the types of its shapes;
 * the shell, the entry points and the build anything of main but no service's code.
 */
function lane(files, ...patterns) {
  // typescript-eslint's version of the rule: a pattern may let `import type` through (allowTypeImports).
  return {
    files,
    ignores: FREE,
    rules: { 'no-restricted-imports': 'off', '@typescript-eslint/no-restricted-imports': ['error', { patterns }] },
  };
}

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      'dist/**',
      'out/**',
      'release/**',
      'test-artifacts/**',
      'renderer/vendor/**',
      '.stryker-tmp/**',
      'reports/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      'no-console': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.cjs', '**/*.mjs'],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        document: 'readonly',
        window: 'readonly',
        fetch: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
      },
    },
  },
  lane(['common/**'], {
    regex: '^(?!\\./)',
    message:
      'common/ imports nothing outside itself (no node:, no package): every layer, the renderer included, reads it.',
  }),
  lane(
    ['renderer/src/**'],
    {
      regex: `^(?!\\./|(\\.\\./)+common/|preact(/|$)|htm(/|$)|.*${SHAPES}|.*${CONSOLE_ANSWERS.regex})`,
      message:
        "The console page imports only common/ (and preact, htm), and types with `import type` from the services' shapes and main/console/answers.ts: everything else comes through the console API.",
    },
    SHAPE_TYPES,
    CONSOLE_ANSWERS,
  ),
  lane(
    ['services/kit/**'],
    A_SERVICE,
    { regex: '(^|/)(main|common)/', message: "The kit is the services' own: nothing of main/, not even common/." },
    RENDERER,
    ELECTRON,
  ),
  ...SERVICES.map((name) =>
    lane(
      [`services/${name}/**`],
      { regex: `(^|/)(${SERVICES.filter((other) => other !== name).join('|')})/`, message: A_SERVICE.message },
      MAIN,
      RENDERER,
      ELECTRON,
    ),
  ),
  lane(['services/*.*'], MAIN, RENDERER, ELECTRON),
  lane(['main/supervisor/**'], ELECTRON, RENDERER),
  lane(['main/console/**'], ELECTRON, { ...A_SERVICE, regex: `^(?!.*${SHAPES}).*(${A_SERVICE.regex})` }, SHAPE_TYPES),
  lane(['main/electron/**', 'main/build/**', 'main/*.*'], A_SERVICE),
  {
    files: ['main/console/**', 'main/supervisor/**', 'services/**'],
    ignores: FREE,
    rules: {
      'no-restricted-globals': [
        'error',
        {
          name: 'encodeURIComponent',
          message:
            'Build a path from input with urlPath (common/url-path.ts): it refuses "." and ".." segments. Queries go in URLSearchParams.',
        },
      ],
    },
  },
);
