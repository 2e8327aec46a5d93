/**
 * A system better-sqlite3 has no prebuilt binary for (32-bit, FreeBSD): the real identity service, started
 * as the app starts it, stops with one line saying how to build one, and exit code 78 (no restarts).
 * This machine has a binary, so the child is shown a node_modules without it: a preload makes
 * `fs.existsSync` answer false for better-sqlite3's prebuilds and build folders, which is what that
 * system looks like to better-sqlite3's own lookup.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { tempDir } from '../../test/support/identity.ts';
import { ROOT, freePort } from '../../test/support/process.ts';

const WITHOUT_BINARY = `data:text/javascript,${encodeURIComponent(
  "import fs from 'node:fs'; const seen = fs.existsSync; fs.existsSync = (p) => /better-sqlite3[\\\\/](prebuilds|build)[\\\\/]/.test(String(p)) ? false : seen(p);",
)}`;

it('a service on a system with no better-sqlite3 binary stops with how to build one, exit 78', async () => {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--import', WITHOUT_BINARY, join(ROOT, 'services', 'run.ts'), 'identity'],
    {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: tempDir('no-binary-home-'),
        IDENTITY_DATA_DIR: tempDir('no-binary-'),
        IDENTITY_PORT: String(await freePort()),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  expect(code, err).toBe(78);
  expect(err).toContain(`better-sqlite3 has no binary for this system (${process.platform}, ${process.arch})`);
  expect(err).toContain('npx node-gyp rebuild');
  expect(err).not.toMatch(/\n\s+at /);
  expect(err).not.toContain('Require stack');
});
