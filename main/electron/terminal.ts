/**
 * Opens a terminal window running one command (the first run's "sign in to the CLI"). Plain Node: the
 * desktop app hands it to the console API; which program opens it is a pure function of the platform
 * and what is on PATH, so the tests run it with a terminal of their own.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { TerminalOpened } from '../../common/contract.ts';

/** Linux terminals in the order tried: Debian's alternative first, then the common desktops' own. */
const LINUX_TERMINALS: ReadonlyArray<{ name: string; args: (command: string) => string[] }> = [
  { name: 'x-terminal-emulator', args: (c) => ['-e', c] },
  { name: 'gnome-terminal', args: (c) => ['--', c] },
  { name: 'konsole', args: (c) => ['-e', c] },
  { name: 'xfce4-terminal', args: (c) => ['-x', c] },
  { name: 'xterm', args: (c) => ['-e', c] },
];

function onPath(name: string, path: string | undefined): string | undefined {
  for (const dir of (path ?? '').split(delimiter).filter(Boolean)) {
    const file = join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

/** AppleScript string literal: backslashes and quotes escaped. */
const appleString = (s: string) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/** The program and arguments that open a terminal running `command` here, or undefined when none is known. */
export function terminalCommand(
  platform: NodeJS.Platform,
  command: string,
  env: NodeJS.ProcessEnv,
): { file: string; args: string[] } | undefined {
  if (platform === 'darwin') {
    // The command is one path (the CLI's); quoted for the shell Terminal runs it in, then for AppleScript.
    const shell = `'${command.replace(/'/g, `'\\''`)}'`;
    return {
      file: 'osascript',
      args: [
        '-e',
        `tell application "Terminal" to do script ${appleString(shell)}`,
        '-e',
        'tell application "Terminal" to activate',
      ],
    };
  }
  if (platform === 'win32')
    return { file: env.ComSpec || 'cmd.exe', args: ['/c', 'start', '""', 'cmd', '/k', command] };
  for (const terminal of LINUX_TERMINALS) {
    const file = onPath(terminal.name, env.PATH);
    if (file) return { file, args: terminal.args(command) };
  }
  return undefined;
}

/** Opens the terminal, detached (it outlives nothing of ours and we wait for nothing of it). */
export function openTerminal(
  command: string,
  options: { platform?: NodeJS.Platform; env?: NodeJS.ProcessEnv } = {},
): Promise<TerminalOpened> {
  const env = options.env ?? process.env;
  const how = terminalCommand(options.platform ?? process.platform, command, env);
  const yourself = `open a terminal yourself, run ${command} and type /login`;
  if (!how)
    return Promise.resolve({ opened: false, message: `No terminal program was found on this system: ${yourself}.` });
  return new Promise((resolve) => {
    const child = spawn(how.file, how.args, { detached: true, stdio: 'ignore', env });
    child.once('spawn', () => {
      child.unref();
      resolve({
        opened: true,
        message: `A terminal runs ${command}: type /login there and follow it, then re-check here.`,
      });
    });
    child.once('error', () => resolve({ opened: false, message: `The terminal could not be started: ${yourself}.` }));
  });
}
