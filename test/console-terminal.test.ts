/**
 * "Open a terminal" in the first run, through the real console API and a real supervisor, while another
 * program answers on the provider's port (the provider stopped, its port taken) and reports a CLI path of
 * its own: the terminal runs the CLI the app's own configuration names (MODELPROV_CLI_BINARY, found as
 * the provider finds it), and what the port says never reaches a terminal or the page.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliSignInStep, FirstRunView, TerminalOpened } from '../common/contract.ts';
import { createConsoleApi } from '../main/console/api.ts';
import { openTerminal } from '../main/electron/terminal.ts';
import { ServiceSupervisor } from '../main/supervisor/supervisor.ts';
import { tempDir } from './support/identity.ts';
import { freePort } from './support/process.ts';
import { waitFor } from './support/wait-for.ts';

const dir = tempDir('console-terminal');
const record = join(dir, 'ran.txt');
const hostileRecord = join(dir, 'hostile-ran.txt');
let impostor: Server;
let supervisor: ServiceSupervisor;

/** An executable that writes how it was started to `into`. */
function program(path: string, into: string): string {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, `#!/bin/sh\nprintf '%s' "$0" > '${into}'\n`);
  chmodSync(path, 0o755);
  return path;
}

// The app's own CLI, at a path a shell would misread unquoted; and the one the impostor names.
const cli = program(join(dir, 'My CLI & $(touch PWNED)', 'claude'), record);
const named = program(join(dir, 'elsewhere', 'claude'), hostileRecord);

beforeAll(async () => {
  const port = await freePort();
  // Whatever holds the provider's port answers /ready as the provider would, naming a CLI of its choosing.
  impostor = createServer((req, res) => {
    res.writeHead(503, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        status: 'not_ready',
        ready: false,
        checks: {
          cli: { ok: true, path: `${named}; touch ${join(dir, 'PWNED')}`, source: 'setting' },
          lockdown: { ok: true, state: 'ok', tools: [], mcp_servers: [], hooks: [], probed_at: null, detail: '' },
          login: { ok: false, state: 'not_signed_in' },
        },
        runs: { running: 0, queued: 0, cap: 1, max_queue: 1 },
        stream: 'whole',
      }),
    );
  });
  await new Promise<void>((resolve) => impostor.listen(port, '127.0.0.1', () => resolve()));
  supervisor = new ServiceSupervisor({
    dataDir: join(dir, 'data'),
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      MODELPROV_PORT: String(port),
      MODELPROV_CLI_BINARY: cli,
    },
  });
});

afterAll(async () => {
  await new Promise<void>((resolve) => impostor?.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

describe('opening a terminal for the CLI\u2019s sign-in', () => {
  it('runs the CLI of the app\u2019s own configuration, never a path the provider\u2019s port reports', async () => {
    // A terminal of the test's own that reads one word as a command line, as konsole does.
    const bin = join(dir, 'bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(
      join(bin, 'x-terminal-emulator'),
      '#!/bin/sh\n[ "$1" = -e ] && shift\nif [ $# -eq 1 ]; then exec /bin/sh -c "$1"; else exec "$@"; fi\n',
    );
    chmodSync(join(bin, 'x-terminal-emulator'), 0o755);
    const api = createConsoleApi({
      supervisor,
      openTerminal: (path) => openTerminal(path, { platform: 'linux', env: { PATH: `${bin}:/usr/bin:/bin` } }),
    });
    const view = await api.call({ method: 'firstRun.get' });
    expect(view.ok).toBe(true);
    const step = (view as { data: FirstRunView }).data.steps[0] as CliSignInStep;
    // The step's state still comes from the port (not signed in); the command does not.
    expect(step).toMatchObject({ id: 'cli-sign-in', done: false, command: cli, canOpenTerminal: true });

    const opened = await api.call({ method: 'firstRun.openTerminal' });
    expect((opened as { data: TerminalOpened }).data).toMatchObject({ opened: true });
    expect((opened as { data: TerminalOpened }).data.message).toContain(cli);
    expect(await waitFor('the CLI to run', () => existsSync(record) && readFileSync(record, 'utf8'), 60_000)).toBe(cli);
    expect(existsSync(hostileRecord)).toBe(false);
    expect(readdirSync(dir)).not.toContain('PWNED');
    expect(readdirSync(process.cwd())).not.toContain('PWNED');
  });

  it('with no CLI found, says so and what to set, and opens nothing', async () => {
    const missing = new ServiceSupervisor({
      dataDir: join(dir, 'data-missing'),
      env: { PATH: join(dir, 'no-such-folder'), HOME: join(dir, 'no-home'), MODELPROV_CLI_BINARY: join(dir, 'nope') },
    });
    let asked = false;
    const api = createConsoleApi({
      supervisor: missing,
      openTerminal: async () => {
        asked = true;
        return { opened: true, message: '' };
      },
    });
    const answer = await api.call({ method: 'firstRun.openTerminal' });
    expect((answer as { data: TerminalOpened }).data).toMatchObject({ opened: false });
    expect((answer as { data: TerminalOpened }).data.message).toMatch(
      /MODELPROV_CLI_BINARY names .*not an executable file/,
    );
    expect(asked).toBe(false);
  });
});
