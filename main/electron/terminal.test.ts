/**
 * Opening a terminal for the CLI's sign-in: the program chosen per platform (pure), and on Linux a real
 * child process, a terminal of the test's own on PATH that records the arguments it was given.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../test/support/identity.ts';
import { openTerminal, terminalCommand } from './terminal.ts';

const dir = tempDir('terminal');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('which terminal opens the sign-in', () => {
  it('macOS: Terminal through osascript, the path quoted for the shell and for AppleScript', () => {
    const how = terminalCommand('darwin', '/Applications/My "CLI"/claude', {});
    expect(how?.file).toBe('osascript');
    expect(how?.args[1]).toBe(`tell application "Terminal" to do script "'/Applications/My \\"CLI\\"/claude'"`);
  });

  it('Windows: a new console window through start, which keeps it open', () => {
    expect(terminalCommand('win32', 'C:\\Tools\\claude.exe', { ComSpec: 'C:\\Windows\\cmd.exe' })).toEqual({
      file: 'C:\\Windows\\cmd.exe',
      args: ['/c', 'start', '""', 'cmd', '/k', 'C:\\Tools\\claude.exe'],
    });
  });

  it('Linux: the first terminal found on PATH; none found, none chosen', () => {
    const bin = join(dir, 'bin-choice');
    mkdirSync(bin, { recursive: true });
    for (const name of ['xterm', 'gnome-terminal']) {
      writeFileSync(join(bin, name), '#!/bin/sh\n');
      chmodSync(join(bin, name), 0o755);
    }
    expect(terminalCommand('linux', '/usr/bin/claude', { PATH: bin })).toEqual({
      file: join(bin, 'gnome-terminal'),
      args: ['--', '/usr/bin/claude'],
    });
    expect(terminalCommand('linux', '/usr/bin/claude', { PATH: join(dir, 'empty') })).toBeUndefined();
  });
});

describe('opening it', () => {
  it('starts the terminal with the command (a real process), and says what to do there', async () => {
    const bin = join(dir, 'bin-open');
    mkdirSync(bin, { recursive: true });
    const record = join(dir, 'args.txt');
    // The test's terminal writes its arguments, then the file's rename says it is complete.
    writeFileSync(
      join(bin, 'x-terminal-emulator'),
      `#!/bin/sh\nprintf '%s\\n' "$@" > '${record}.tmp' && mv '${record}.tmp' '${record}'\n`,
    );
    chmodSync(join(bin, 'x-terminal-emulator'), 0o755);
    const opened = await openTerminal('/opt/cli/claude', { platform: 'linux', env: { PATH: `${bin}:/usr/bin:/bin` } });
    expect(opened).toEqual({
      opened: true,
      message: 'A terminal runs /opt/cli/claude: type /login there and follow it, then re-check here.',
    });
    await expect.poll(() => existsSync(record), { timeout: 60_000, interval: 50 }).toBe(true);
    expect(readFileSync(record, 'utf8')).toBe('-e\n/opt/cli/claude\n');
  });

  it('no terminal on this system: not opened, with the command to run', async () => {
    const opened = await openTerminal('/opt/cli/claude', { platform: 'linux', env: { PATH: join(dir, 'empty') } });
    expect(opened).toEqual({
      opened: false,
      message:
        'No terminal program was found on this system: open a terminal yourself, run /opt/cli/claude and type /login.',
    });
  });
});
