/**
 * Truthful states and the first run, through the console API against the four real services under the
 * real supervisor: a CLI that is not signed in (the provider's stand-in, signed out by a file) makes the
 * provider `waiting`, not "starting"; the overview says what it waits for and the one action; each
 * first-run step is ticked only when its service confirms it (the provider's re-check, the gateway acting
 * under the new connection on the GitHub double, identity listing a hub credential); "done" survives a
 * new console; a platform that stops answering turns the gateway `waiting` with its need.
 */
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type {
  CliSignInStep,
  ConnectionTest,
  ConsoleApi,
  FirstRunView,
  OverviewView,
  ServiceStatus,
  TerminalOpened,
} from '../common/contract.ts';
import { createConsoleApi } from '../main/console/api.ts';
import { standInBinary } from '../services/model-provider/test-support/stand-in.ts';
import { SETTLE_MS, startConsoleStack, type ConsoleStack } from './support/console-stack.ts';
import { tempDir } from './support/identity.ts';
import { waitFor } from './support/wait-for.ts';

vi.setConfig({ testTimeout: 120_000, hookTimeout: SETTLE_MS + 60_000 });

let stack: ConsoleStack;
let api: ConsoleApi;
let cliDir: string;
let signedOutFile: string;
const answers: string[] = [];

async function data<T>(method: string, params?: unknown, on: ConsoleApi = api): Promise<T> {
  const result = await on.call(params === undefined ? { method } : { method, params });
  answers.push(JSON.stringify(result));
  if (!result.ok) throw new Error(`${method} failed: ${result.error.message}`);
  return result.data as T;
}

const statusOf = (name: string): ServiceStatus => stack.supervisor.status().find((s) => s.name === name)!;

beforeAll(async () => {
  cliDir = tempDir('first-run-cli');
  const standIn = standInBinary(cliDir);
  signedOutFile = join(standIn.recordDir, 'signed-out');
  writeFileSync(signedOutFile, '');
  stack = await startConsoleStack({ MODELPROV_CLI_BINARY: standIn.binary });
  api = createConsoleApi({ supervisor: stack.supervisor, env: stack.env });
});

afterAll(async () => {
  await stack?.close();
  rmSync(cliDir, { recursive: true, force: true });
});

describe('a CLI that is not signed in', () => {
  it('leaves the provider waiting (not starting), naming the login check', () => {
    expect(stack.settled.map((s) => `${s.name}:${s.state}`)).toEqual([
      'identity:ready',
      'persona-store:ready',
      'repohost-gateway:ready',
      'model-provider:waiting',
    ]);
    expect(statusOf('model-provider').waitingOn).toContain('login');
  });

  it('the overview says "waiting for you" with the actions, and each card its need', async () => {
    const view = await data<OverviewView>('overview.get');
    expect(view.headline.state).toBe('waiting');
    expect(view.headline.text).toBe('Waiting for you: Connect GitHub; sign in to the CLI.');
    const provider = view.services.find((s) => s.name === 'model-provider')!;
    expect(provider.need).toMatchObject({
      kind: 'cli-sign-in',
      action: 'Sign in to the CLI',
      place: 'first-run',
      step: 'cli-sign-in',
    });
    // No connection yet: the gateway is up and acts for nobody.
    expect(view.services.find((s) => s.name === 'repohost-gateway')!.need).toMatchObject({
      kind: 'github-connection',
      step: 'github-connection',
    });
    expect(view.needs.map((n) => n.kind)).toEqual(['github-connection', 'cli-sign-in']);
    // The sign-in is said once, as the provider's need, not again under "needs attention".
    expect(view.attention.filter((a) => /signed in/.test(a.text))).toEqual([]);
  });

  it('the first run: nothing ticked, the exact command, and no terminal from a browser console', async () => {
    const view = await data<FirstRunView>('firstRun.get');
    expect(view.done).toBe(false);
    const [cli, github, hub] = view.steps;
    expect(cli).toMatchObject({
      id: 'cli-sign-in',
      done: false,
      command: stack.env.MODELPROV_CLI_BINARY,
      then: '/login',
      canOpenTerminal: false,
    });
    expect(github).toMatchObject({
      id: 'github-connection',
      done: false,
      connections: [],
      tokenUrl: 'https://github.com/settings/personal-access-tokens/new',
    });
    expect(github.permissions.map((p) => `${p.name}: ${p.access}`)).toContain('Pull requests: read and write');
    expect(hub).toMatchObject({ id: 'hub-credential', done: false, credentials: 0 });
    const terminal = await data<TerminalOpened>('firstRun.openTerminal');
    expect(terminal.opened).toBe(false);
    expect(terminal.message).toContain(`run ${stack.env.MODELPROV_CLI_BINARY} and type /login`);
  });

  it('signing in, then re-check: the step is ticked and the provider is ready at once', async () => {
    rmSync(signedOutFile);
    // The provider re-probes at most once in 5 s; a re-check inside that answers as before.
    const step = await waitFor(
      'a re-check to find the CLI signed in',
      async () => {
        const answer = await data<CliSignInStep>('firstRun.recheckSignIn');
        return answer.done && answer;
      },
      SETTLE_MS,
    );
    expect(step).toMatchObject({ done: true, text: 'The CLI is signed in.' });
    expect(statusOf('model-provider').state).toBe('ready');
    expect(statusOf('model-provider').waitingOn).toBeUndefined();
  });
});

describe('connecting GitHub and making a hub credential', () => {
  const token = `github_pat_${'Z9y8X7w6'.repeat(5)}`;

  it('a connection is tested through the gateway, and the step is ticked with the account', async () => {
    stack.platform.addUser('mona');
    stack.platform.addToken(token, 'mona');
    await data('connections.put', { profile: 'work', token });
    const tested = await data<ConnectionTest>('firstRun.testConnection', { profile: 'work' });
    expect(tested).toMatchObject({ ok: true, profile: 'work', login: 'mona', kind: 'token' });
    const unknown = await data<ConnectionTest>('firstRun.testConnection', { profile: 'nobody' });
    expect(unknown.ok).toBe(false);
    const view = await data<FirstRunView>('firstRun.get');
    expect(view.steps[1]).toMatchObject({ done: true, connections: ['work'], login: 'mona' });
  });

  it('a hub credential ticks the last step; the overview is all ready', async () => {
    await data('hub.createCredential', { label: 'my hub', expiresInDays: 30 });
    const view = await data<FirstRunView>('firstRun.get');
    expect(view.steps.map((s) => s.done)).toEqual([true, true, true]);
    const overview = await data<OverviewView>('overview.get');
    expect(overview.headline).toEqual({ state: 'ready', text: 'All services are ready.' });
    expect(overview.needs).toEqual([]);
  });

  it('"done" is kept: a new console (a restart) still knows, and the guide can be asked for again', async () => {
    expect((await data<FirstRunView>('firstRun.setDone', { done: true })).done).toBe(true);
    expect(existsSync(join(stack.dataDir, 'console', 'settings.json'))).toBe(true);
    const again = createConsoleApi({ supervisor: stack.supervisor, env: stack.env });
    expect((await data<FirstRunView>('firstRun.get', undefined, again)).done).toBe(true);
    expect((await data<FirstRunView>('firstRun.setDone', { done: false }, again)).done).toBe(false);
    const refused = await api.call({ method: 'firstRun.setDone', params: { done: 'yes' } });
    expect(refused).toMatchObject({ ok: false, error: { status: 422 } });
  });
});

describe('a platform that stops answering', () => {
  it('turns the gateway waiting, with its need; the connection test says why', async () => {
    await stack.platform.close();
    const status = await stack.supervisor.recheck('repohost-gateway');
    expect(status.state).toBe('waiting');
    expect(status.waitingOn).toEqual(['platform']);
    const view = await data<OverviewView>('overview.get');
    expect(view.headline.state).toBe('waiting');
    expect(view.services.find((s) => s.name === 'repohost-gateway')!.need).toMatchObject({
      kind: 'platform-unreachable',
      place: 'services',
    });
    const tested = await data<ConnectionTest>('firstRun.testConnection', { profile: 'work' });
    expect(tested.ok).toBe(false);
  });

  it('no answer carries the platform token', () => {
    for (const answer of answers) expect(answer).not.toContain(token());
  });
});

function token(): string {
  return 'Z9y8X7w6'.repeat(5);
}
