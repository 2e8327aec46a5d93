import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { build } from '../../main/build/build.ts';
import { MANIFEST, type Manifest } from '../../main/supervisor/build-outputs.ts';
import { startTestIdentity } from '../../test/support/identity.ts';
import { postgresUnavailable, startPostgres } from '../../test/support/postgres.ts';
import { freePort, ROOT } from '../../test/support/process.ts';
import { Client, note } from './test-support/harness.ts';
import { waitFor } from '../../test/support/wait-for.ts';

/**
 * The installed app runs the built bundle, not these sources: PostgreSQL's client (pg) must be inside it,
 * since the app ships only the runtime packages the build leaves outside (better-sqlite3, pino,
 * swagger-ui-dist). Built into a project-like folder, as main/supervisor/service-bundles.test.ts does.
 */
const skip = postgresUnavailable();
if (skip) console.warn(`persona store bundle test on PostgreSQL skipped: ${skip}`);

const project = mkdtempSync(join(tmpdir(), 'persona-bundle-'));
afterAll(() => rmSync(project, { recursive: true, force: true }));

describe.skipIf(skip !== undefined)(`the persona store's bundle${skip ? ` (skipped: ${skip})` : ''}`, () => {
  it('carries pg inside (pg-native optional, as pg itself has it) and runs on PostgreSQL as a plain Node program', async () => {
    writeFileSync(join(project, 'package.json'), readFileSync(join(ROOT, 'package.json')));
    symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'), 'dir');
    const outDir = join(project, 'out');
    const made = await build({ targets: ['services'], services: ['persona-store'], outDir });
    expect(made.services).toMatchObject({
      outputs: ['persona-store.mjs'],
      externals: { 'persona-store.mjs': ['better-sqlite3', 'pino', 'swagger-ui-dist'] },
      optional: { 'persona-store.mjs': ['pg-native'] },
    });
    const manifest = JSON.parse(readFileSync(join(outDir, 'services', MANIFEST), 'utf8')) as Manifest;
    expect(Object.keys(manifest.inputs)).toContain('node_modules/pg/lib/client.js');

    const server = await startPostgres();
    const identity = await startTestIdentity();
    const port = await freePort();
    const child = spawn(process.execPath, [join(outDir, 'services', 'persona-store.mjs')], {
      env: {
        PATH: process.env.PATH,
        HOME: project,
        PERSONA_PORT: String(port),
        PERSONA_DATA_DIR: join(project, 'data'),
        ...identity.trust('PERSONA_'),
        PERSONA_LOG_LEVEL: 'silent',
        PERSONA_DATABASE_URL: await server.createDatabase(),
      },
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      // Polled: nothing says when a port starts answering; the deadline is a backstop for a loaded machine.
      const ready = await waitFor(
        'the bundle to answer /ready',
        async (): Promise<unknown> => {
          // A bundle that exits is an answer too: the check below then fails naming it.
          if (child.exitCode !== null) return `exited (${child.exitCode})`;
          return fetch(`http://127.0.0.1:${port}/ready`).then(
            (r) => (r.ok ? r.json() : undefined),
            () => undefined,
          );
        },
        120_000,
      );
      expect(ready).toMatchObject({ checks: { database: 'ok' } });
      const c = new Client(`http://127.0.0.1:${port}`, await identity.mint(identity.localCredential, 'persona'));
      expect((await c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' })).status).toBe(201);
      expect((await c.call('POST', '/v1/personas/ada/notes', note('running along the river'))).status).toBe(201);
      expect(
        (await c.call<{ notes: { content: string }[] }>('GET', '/v1/personas/ada/recall?q=runs')).body.notes.map(
          (n) => n.content,
        ),
      ).toEqual(['running along the river']);
    } finally {
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      await identity.close();
      await server.stop();
    }
  });
});
