/**
 * Opens a terminal window running one program (the first run's "sign in to the CLI"): the path of the
 * CLI as the supervisor finds it, never text from a service's answer. Plain Node: the desktop app hands
 * it to the console API; which program opens it, and how the path is quoted for the shell or
 * interpreter between the terminal and the CLI, is a pure function of the platform and what is on PATH,
 * so the tests run it with a terminal of their own and the quoted text with real shells.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { TerminalOpened } from '../../common/contract.ts';

/** Linux terminals in the order tried, each with the option after which the rest is the program and its arguments. */
const LINUX_TERMINALS: ReadonlyArray<{ name: string; run: string }> = [
  { name: 'x-terminal-emulator', run: '-e' },
  { name: 'gnome-terminal', run: '--' },
  { name: 'konsole', run: '-e' },
  { name: 'xfce4-terminal', run: '-x' },
  { name: 'xterm', run: '-e' },
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

/**
 * A POSIX shell word: the text in single quotes, each single quote as `'\''`. Nothing inside single
 * quotes is special to sh, bash or zsh (`$()`, backticks, `&`, `;`, `%`, `^`, `!`, a backslash).
 */
export const shellQuoted = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/** An AppleScript string literal: a backslash and a double quote escaped, nothing else is special. */
export const appleScriptString = (text: string) => `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/**
 * The program's path as cmd.exe's `start` reads it, in double quotes: inside them `&`, `|`, `<`, `>`, `^`,
 * `(`, `)` and spaces are plain text, and `!` too with delayed expansion off. A `%` is not: cmd expands
 * `%NAME%` even in quotes and has no escape for it on a command line, so a path holding one is refused
 * (as is a `"`, which no Windows file name holds).
 */
export const cmdQuoted = (path: string) => `"${path}"`;

/** Why a program's path cannot be handed to a terminal here, or undefined when it can. */
export function unquotable(platform: NodeJS.Platform, path: string): string | undefined {
  // A line break would end the command where a terminal types it; no other control character belongs in a path either.
  if (/\p{Cc}/u.test(path)) return 'it holds a line break or another control character';
  if (platform === 'win32' && /["%]/.test(path))
    return 'it holds a % or a ", which the Windows command interpreter cannot be given as plain text';
  return undefined;
}

/** The program and arguments that open a terminal running `program` here, or undefined when none is known. */
export function terminalCommand(
  platform: NodeJS.Platform,
  program: string,
  env: NodeJS.ProcessEnv,
): { file: string; args: string[]; windowsVerbatimArguments?: true } | undefined {
  if (platform === 'darwin') {
    // Terminal types the text into the person's login shell (zsh or bash), quoted for it, then for AppleScript.
    return {
      file: 'osascript',
      args: [
        '-e',
        `tell application "Terminal" to do script ${appleScriptString(shellQuoted(program))}`,
        '-e',
        'tell application "Terminal" to activate',
      ],
    };
  }
  if (platform === 'win32') {
    // One cmd.exe reads the line, once: /d no AutoRun commands, /v:off no !expansion!, /s strips just the outer
    // quotes; `start` opens the program in a console window of its own. Node must pass the line as written.
    return {
      file: env.ComSpec || 'cmd.exe',
      args: ['/d', '/v:off', '/s', '/c', `"start "" ${cmdQuoted(program)}"`],
      windowsVerbatimArguments: true,
    };
  }
  for (const terminal of LINUX_TERMINALS) {
    const file = onPath(terminal.name, env.PATH);
    // Through sh with the path as one quoted word: a terminal given a single word may split it (konsole)
    // or, when it does not run, hand it to a shell as a command line (xterm).
    if (file) return { file, args: [terminal.run, '/bin/sh', '-c', `exec ${shellQuoted(program)}`] };
  }
  return undefined;
}

/** Opens the terminal, detached (it outlives nothing of ours and we wait for nothing of it). */
export function openTerminal(
  program: string,
  options: { platform?: NodeJS.Platform; env?: NodeJS.ProcessEnv } = {},
): Promise<TerminalOpened> {
  const env = options.env ?? process.env;
  const platform = options.platform ?? process.platform;
  const why = unquotable(platform, program);
  // A path with a control character is shown with it escaped, so that the message says what is there.
  const yourself = `open a terminal yourself, run ${why ? JSON.stringify(program) : program} and type /login`;
  if (why)
    return Promise.resolve({
      opened: false,
      message: `The CLI's path is not opened in a terminal: ${why}. ${yourself}.`,
    });
  const how = terminalCommand(platform, program, env);
  if (!how)
    return Promise.resolve({ opened: false, message: `No terminal program was found on this system: ${yourself}.` });
  return new Promise((resolve) => {
    const child = spawn(how.file, how.args, {
      detached: true,
      stdio: 'ignore',
      env,
      windowsHide: true,
      windowsVerbatimArguments: how.windowsVerbatimArguments ?? false,
    });
    child.once('spawn', () => {
      child.unref();
      resolve({
        opened: true,
        message: `A terminal runs ${program}: type /login there and follow it, then re-check here.`,
      });
    });
    child.once('error', () => resolve({ opened: false, message: `The terminal could not be started: ${yourself}.` }));
  });
}
