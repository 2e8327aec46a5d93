/**
 * The lint rule that keeps each layer's imports in its lane (eslint.config.js): ESLint itself, with the
 * project's own configuration, lints one import placed at a path of each layer, as `npm run lint` would.
 */
import { join } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { ROOT } from './support/process.ts';

const eslint = new ESLint({ cwd: ROOT });

/** The lane errors ESLint reports for `import ... from '<specifier>'` in a file at `path`. */
async function laneErrors(path: string, specifier: string, kind: 'value' | 'type' = 'value'): Promise<string[]> {
  const source =
    kind === 'type'
      ? `import type { X } from '${specifier}';\nexport type Y = X;\n`
      : `import * as x from '${specifier}';\nexport const y = x;\n`;
  const [result] = await eslint.lintText(source, { filePath: join(ROOT, path) });
  return result!.messages
    .filter((m) => m.ruleId === '@typescript-eslint/no-restricted-imports' || m.ruleId === 'no-restricted-imports')
    .map((m) => m.message);
}

// [where the file is, what it imports, whether that stays in its lane]
const CASES: Array<[string, string, boolean]> = [
  ['renderer/src/page.ts', '../../services/persona-store/change-log.ts', false],
  ['renderer/src/page.ts', '../../main/console/server-parts.ts', false],
  ['renderer/src/page.ts', '../../main/supervisor/types.ts', false],
  ['renderer/src/page.ts', '../../services/persona-store/shapes.ts', false],
  ['renderer/src/page.ts', '../../main/console/answers.ts', false],
  ['renderer/src/page.ts', 'zod', false],
  ['renderer/src/page.ts', 'node:fs', false],
  ['renderer/src/page.ts', '../../common/services.ts', true],
  ['renderer/src/page.ts', './app.ts', true],
  ['renderer/src/page.ts', 'preact/hooks', true],
  ['common/facts.ts', 'node:path', false],
  ['common/facts.ts', 'zod', false],
  ['common/facts.ts', '../main/supervisor/types.ts', false],
  ['common/facts.ts', './states.ts', true],
  ['services/kit/shell.ts', '../persona-store/store.ts', false],
  ['services/kit/shell.ts', '../../common/services.ts', false],
  ['services/kit/shell.ts', './config.ts', true],
  ['services/kit/shell.ts', 'express', true],
  ['services/persona-store/store.ts', '../identity/keys.ts', false],
  ['services/persona-store/store.ts', '../../main/supervisor/types.ts', false],
  ['services/persona-store/store.ts', 'electron', false],
  ['services/persona-store/store.ts', '../kit/config.ts', true],
  ['services/persona-store/store.ts', '../../common/services.ts', true],
  ['services/persona-store/store.ts', './tables.ts', true],
  ['services/repohost-gateway/routes/reads.ts', '../../model-provider/config.ts', false],
  ['services/repohost-gateway/routes/reads.ts', '../../kit/api.ts', true],
  ['services/repohost-gateway/routes/reads.ts', '../platform.ts', true],
  ['services/run.ts', '../main/supervisor/supervisor.ts', false],
  ['services/run.ts', '../common/services.ts', true],
  ['main/supervisor/launcher.ts', 'electron', false],
  ['main/supervisor/launcher.ts', '../electron/tray-menu.ts', false],
  ['main/supervisor/launcher.ts', '../../renderer/src/app.ts', false],
  ['main/supervisor/launcher.ts', '../../common/services.ts', true],
  ['main/supervisor/launcher.ts', 'execa', true],
  ['main/console/api.ts', 'electron', false],
  ['main/console/api.ts', '../electron/ipc.ts', false],
  ['main/console/api.ts', '../supervisor/types.ts', true],
  ['main/console/api.ts', '../../services/persona-store/store.ts', false],
  ['main/console/api.ts', '../../services/model-provider/shapes.ts', false],
  ['main/console/server.ts', '../../services/kit/connections.ts', true],
  ['main/electron/desktop.ts', '../../services/persona-store/store.ts', false],
  ['main/electron/desktop.ts', '../../services/kit/config.ts', true],
  ['main/electron/desktop.ts', '../console/api.ts', true],
  ['main/electron/desktop.ts', 'electron', true],
  ['main/headless.ts', '../services/identity/service.ts', false],
  ['main/headless.ts', './console/server.ts', true],
  ['test/anything.test.ts', '../services/persona-store/store.ts', true],
  ['services/persona-store/store.test.ts', '../identity/service.ts', true],
];

describe('each layer imports only what its lane allows (npm run lint)', { timeout: 240_000 }, () => {
  it.each(CASES)('%s importing %s: allowed %s', async (path, specifier, allowed) => {
    const errors = await laneErrors(path, specifier);
    if (allowed) expect(errors).toEqual([]);
    else expect(errors).toHaveLength(1);
  });

  it('a type-only import crosses no lane either, and the error says what to do instead', async () => {
    const [message] = await laneErrors('renderer/src/page.ts', '../../main/console/api.ts', 'type');
    expect(message).toContain('imports only common/');
    expect(await laneErrors('main/supervisor/launcher.ts', 'electron', 'type')).toEqual([
      expect.stringContaining('Electron stays in main/electron/'),
    ]);
    expect(await laneErrors('main/console/api.ts', '../../services/persona-store/store.ts', 'type')).toEqual([
      expect.stringContaining('talk to it over HTTP'),
    ]);
  });

  // [where the file is, the service's shapes file]: the page and the console take a service's answer types, never its code.
  it.each([
    ['renderer/src/page.ts', '../../services/persona-store/shapes.ts'],
    ['renderer/src/page.ts', '../../services/model-provider/shapes.ts'],
    ['renderer/src/page.ts', '../../services/repohost-gateway/shapes.ts'],
    ['main/console/overview.ts', '../../services/identity/shapes.ts'],
    ['main/console/overview.ts', '../../services/model-provider/shapes.ts'],
  ])('%s may import type from %s, and a value import says to use import type', async (path, specifier) => {
    expect(await laneErrors(path, specifier, 'type')).toEqual([]);
    expect(await laneErrors(path, specifier)).toEqual([expect.stringContaining('`import type`')]);
  });

  it('the page takes the console\u2019s answer types from main/console/answers.ts, and nothing else of main/', async () => {
    expect(await laneErrors('renderer/src/page.ts', '../../main/console/answers.ts', 'type')).toEqual([]);
    expect(await laneErrors('renderer/src/page.ts', '../../main/console/methods.ts', 'type')).toEqual([
      expect.stringContaining('imports only common/'),
    ]);
    expect(await laneErrors('renderer/src/page.ts', '../../services/model-provider/app.ts', 'type')).toHaveLength(1);
  });
});
