/**
 * Opening a terminal for the CLI's sign-in: the program chosen per platform (pure), the path quoted for
 * what reads it, and on Linux a real child process, a terminal of the test's own on PATH that runs its
 * arguments as xterm runs those after -e. The quoting is tried with paths a person could not type
 * safely, each a real executable that records how it was started: run by real shells (sh and bash), the
 * right file runs and nothing else does. cmd.exe is not on this machine: its line is pinned as written.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../test/support/identity.ts';
import { waitFor } from '../../test/support/wait-for.ts';
import { appleScriptString, openTerminal, shellQuoted, terminalCommand, unquotable } from './terminal.ts';

const dir = tempDir('terminal');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Folder names that a shell or cmd.exe would read as something else, were they not quoted. */
const HOSTILE = [
  'My CLI',
  "it's",
  'say "hi"',
  'a&b',
  'a;b',
  '100%',
  '%PATH%',
  'a^b',
  '$(touch PWNED)',
  '`touch PWNED`',
  '${HOME}',
  'a|b',
  'a>b',
  '(x)',
  '-n',
  '~user',
  '*',
  '!!',
  'back\\slash',
  "'; touch PWNED; '",
  'ünïcødé ✓',
];

/**
 * Every hostile name as a folder of the sandbox holding an executable `claude` that writes how it was
 * started ($0) to its own record, a file of a plain name. The sandbox is the shells' working folder: a
 * command that escaped its quotes would create `PWNED` there.
 */
const sandbox = join(dir, 'sandbox');
const records = join(dir, 'records');
mkdirSync(sandbox, { recursive: true });
mkdirSync(records, { recursive: true });
const clis = HOSTILE.map((name, i) => {
  const folder = join(sandbox, name);
  mkdirSync(folder, { recursive: true });
  const program = join(folder, 'claude');
  const record = join(records, `${i}.txt`);
  writeFileSync(program, `#!/bin/sh\nprintf '%s' "$0" > '${record}'\n`);
  chmodSync(program, 0o755);
  return { name, program, record };
});

const ranAs = (record: string) => (existsSync(record) ? readFileSync(record, 'utf8') : undefined);
/** No command escaped its quotes: none made `PWNED` where the shells or the terminals ran. */
const nothingEscaped = () => {
  for (const where of [sandbox, process.cwd()]) expect(readdirSync(where)).not.toContain('PWNED');
};

describe('the CLI\u2019s path, quoted for what reads it', () => {
  it.each(['sh', 'bash'])('as a POSIX word, %s runs exactly that file, whatever the path holds', (shell) => {
    for (const { name, program, record } of clis) {
      rmSync(record, { force: true });
      const run = spawnSync(shell, ['-c', `exec ${shellQuoted(program)}`], { cwd: sandbox, encoding: 'utf8' });
      expect(run.status, `${name}: ${run.stderr}`).toBe(0);
      expect(ranAs(record), name).toBe(program);
    }
    nothingEscaped();
  });

  it('on macOS, Terminal is told the same word in an AppleScript string it cannot end early', () => {
    for (const { name, program, record } of clis) {
      const how = terminalCommand('darwin', program, {});
      expect(how?.file).toBe('osascript');
      const script = how!.args[1]!;
      // One string literal to the end of the line: every quote inside it escaped, every backslash too.
      const literal = /^tell application "Terminal" to do script "((?:[^"\\]|\\["\\])*)"$/.exec(script);
      expect(literal, name).not.toBeNull();
      const typed = literal![1]!.replace(/\\(["\\])/g, '$1');
      // What Terminal types into the person's shell (zsh or bash; sh reads it alike), run by that shell.
      for (const shell of ['bash', 'sh']) {
        rmSync(record, { force: true });
        const run = spawnSync(shell, ['-c', typed], { cwd: sandbox, encoding: 'utf8' });
        expect(run.status, `${name}: ${run.stderr}`).toBe(0);
        expect(ranAs(record), name).toBe(program);
      }
    }
    expect(appleScriptString('a "b" \\ c')).toBe('"a \\"b\\" \\\\ c"');
    nothingEscaped();
  });

  it('on Windows, one cmd.exe line with the path in double quotes for start, passed as written; % and " refused', () => {
    for (const path of [
      'C:\\Tools\\My CLI\\claude.exe',
      'C:\\a&b\\(x)^!\\claude.cmd',
      "C:\\it's $(x) `y`;\\claude.exe",
    ]) {
      expect(terminalCommand('win32', path, { ComSpec: 'C:\\Windows\\system32\\cmd.exe' })).toEqual({
        file: 'C:\\Windows\\system32\\cmd.exe',
        args: ['/d', '/v:off', '/s', '/c', `"start "" "${path}""`],
        windowsVerbatimArguments: true,
      });
      expect(unquotable('win32', path)).toBeUndefined();
    }
    // cmd.exe expands %NAME% inside quotes too, and has no escape for it on a command line.
    for (const path of ['C:\\100%\\claude.exe', 'C:\\%PATH%\\claude.exe', 'C:\\say "hi"\\claude.exe'])
      expect(unquotable('win32', path)).toMatch(/% or a "/);
    expect(unquotable('linux', '/opt/100%/claude')).toBeUndefined();
  });

  it.each(['linux', 'darwin', 'win32'] as const)(
    'a path with a line break or another control character is never handed to a terminal (%s)',
    async (platform) => {
      const bin = join(dir, `bin-refuse-${platform}`);
      mkdirSync(bin, { recursive: true });
      const started = join(dir, `started-${platform}`);
      writeFileSync(join(bin, 'x-terminal-emulator'), `#!/bin/sh\ntouch '${started}'\n`);
      chmodSync(join(bin, 'x-terminal-emulator'), 0o755);
      for (const program of [
        '/opt/cli\n/claude',
        '/opt/cli/claude\r\ntouch PWNED',
        '/opt/cli\t/claude',
        '/opt/\u0007cli/claude',
      ]) {
        const opened = await openTerminal(program, { platform, env: { PATH: bin } });
        expect(opened.opened).toBe(false);
        expect(opened.message).toContain('line break or another control character');
        expect(opened.message).toContain(JSON.stringify(program));
      }
      // It returned before anything was started.
      expect(existsSync(started)).toBe(false);
    },
  );
});

describe('which terminal opens the sign-in', () => {
  it('Linux: the first terminal found on PATH, given sh and the quoted path; none found, none chosen', () => {
    const bin = join(dir, 'bin-choice');
    mkdirSync(bin, { recursive: true });
    for (const name of ['xterm', 'gnome-terminal']) {
      writeFileSync(join(bin, name), '#!/bin/sh\n');
      chmodSync(join(bin, name), 0o755);
    }
    expect(terminalCommand('linux', '/usr/bin/claude', { PATH: bin })).toEqual({
      file: join(bin, 'gnome-terminal'),
      args: ['--', '/bin/sh', '-c', "exec '/usr/bin/claude'"],
    });
    expect(terminalCommand('linux', '/usr/bin/claude', { PATH: join(dir, 'empty') })).toBeUndefined();
  });
});

describe('opening it', () => {
  /** Terminals of the test's own, each running what follows -e as a kind of terminal does. */
  const TERMINALS = {
    'runs the program and its arguments (xterm, gnome-terminal)': '[ "$1" = -e ] && shift\nexec "$@"',
    'reads a single word as a command line (konsole; xterm when it cannot run it)':
      '[ "$1" = -e ] && shift\nif [ $# -eq 1 ]; then exec /bin/sh -c "$1"; else exec "$@"; fi',
  };
  function terminalOnPath(name: string, script: string): string {
    const bin = join(dir, name);
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, 'x-terminal-emulator'), `#!/bin/sh\n${script}\n`);
    chmodSync(join(bin, 'x-terminal-emulator'), 0o755);
    return bin;
  }

  it.each(Object.entries(TERMINALS))(
    'starts a terminal that %s (a real process) with the CLI, whatever its path holds, and says what to do there',
    async (_kind, script) => {
      const bin = terminalOnPath(`bin-open-${script.length}`, script);
      for (const { name, program, record } of clis) {
        rmSync(record, { force: true });
        const opened = await openTerminal(program, { platform: 'linux', env: { PATH: `${bin}:/usr/bin:/bin` } });
        expect(opened).toEqual({
          opened: true,
          message: `A terminal runs ${program}: type /login there and follow it, then re-check here.`,
        });
        // The terminal runs detached: its record says when the CLI has run (a backstop, not a window).
        expect(await waitFor(`the CLI in ${name}`, () => ranAs(record), 60_000)).toBe(program);
      }
      nothingEscaped();
    },
  );

  it('no terminal on this system: not opened, with the command to run', async () => {
    const opened = await openTerminal('/opt/cli/claude', { platform: 'linux', env: { PATH: join(dir, 'empty') } });
    expect(opened).toEqual({
      opened: false,
      message:
        'No terminal program was found on this system: open a terminal yourself, run /opt/cli/claude and type /login.',
    });
  });
});
