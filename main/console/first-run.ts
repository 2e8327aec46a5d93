/**
 * The first run: sign in to the CLI, connect GitHub, make a hub credential. Each step is read from the
 * service that confirms it (the provider's /ready, the gateway acting under the connection, identity's
 * credentials), never from what the page did; whether the person finished the guide is a setting.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { urlPath } from '../../common/url-path.ts';
import type {
  ConnectionSaved,
  ConnectionTest,
  CliSignInStep,
  FirstRunView,
  GithubConnectionStep,
  HubCredentialStep,
  TerminalOpened,
  TokenPermission,
} from '../../common/contract.ts';
import type { ConnectionList, SessionCredentialList } from '../../services/identity/shapes.ts';
import type { Readiness } from '../../services/model-provider/shapes.ts';
import type { Me } from '../../services/repohost-gateway/shapes.ts';
import { method, NoParams, Profile, type MethodContext } from './method-spec.ts';
import { ConsoleError } from './service-client.ts';

/** GitHub's page that makes a fine-grained token (its prefill parameters are not offered: GitHub withdrew them). */
export const TOKEN_URL = 'https://github.com/settings/personal-access-tokens/new';

/** What the gateway's routes call on the platform, as the token page names the permissions. */
export const TOKEN_PERMISSIONS: readonly TokenPermission[] = [
  { name: 'Metadata', access: 'read', why: 'list and search repositories (GitHub adds it to every token)' },
  { name: 'Contents', access: 'read and write', why: 'read files and write commits and branches' },
  { name: 'Pull requests', access: 'read and write', why: 'open, review, update and merge pull requests' },
  { name: 'Issues', access: 'read and write', why: 'open, comment on and close issues' },
  {
    name: 'Actions',
    access: 'read and write',
    why: 'read workflow runs and their logs, dispatch, re-run and cancel them',
  },
  { name: 'Checks', access: 'read', why: 'read the check runs of a commit' },
  { name: 'Commit statuses', access: 'read', why: 'read the statuses of a commit' },
  {
    name: 'Administration',
    access: 'read and write',
    why: 'create, rename and delete repositories (choose \u201cAll repositories\u201d to create new ones)',
  },
];

const SIGN_IN = '/login';

/**
 * The CLI to sign in with: where the provider finds it in the environment the app gives it (the
 * supervisor's answer, from the app's own settings), never a path that whatever answers on the
 * provider's port reports; `claude` when there is none yet.
 */
const cliCommand = (ctx: MethodContext) => {
  const cli = ctx.supervisor.providerCli();
  return cli.found ? cli.path : 'claude';
};

function signInStep(
  command: string,
  ready: Readiness | undefined,
  error: string | undefined,
  canOpenTerminal: boolean,
): CliSignInStep {
  const base = { id: 'cli-sign-in' as const, command, then: SIGN_IN, canOpenTerminal };
  if (!ready)
    return {
      ...base,
      done: false,
      text: 'The chat-model provider could not be asked whether the CLI is signed in.',
      ...(error ? { error } : {}),
    };
  if (!ready.checks.cli.ok)
    return {
      ...base,
      done: false,
      text: 'The provider finds no CLI: install it (or set MODELPROV_CLI_BINARY), then sign in.',
    };
  const state = ready.checks.login.state;
  if (state === 'signed_in') return { ...base, done: true, text: 'The CLI is signed in.' };
  if (state === 'not_signed_in')
    return {
      ...base,
      done: false,
      text: `The CLI is not signed in: run ${command} in a terminal, type ${SIGN_IN} and follow it, then re-check.`,
    };
  return { ...base, done: false, text: 'The provider is still checking the CLI; re-check in a moment.' };
}

async function providerReady(ctx: MethodContext, recheck: boolean): Promise<{ ready?: Readiness; error?: string }> {
  try {
    const answer = await ctx.services.call<Readiness>('model-provider', {
      path: '/ready',
      query: recheck ? { recheck: 'login' } : {},
      acceptStatus: [503],
    });
    return { ready: answer.body };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

async function connectionProfiles(ctx: MethodContext): Promise<string[]> {
  return (await ctx.services.call<ConnectionList>('identity', { path: '/v1/connections' })).body.connections.map(
    (c) => c.profile,
  );
}

/** `GET /v1/me` through the gateway under a profile: the connection works end to end (identity, gateway, platform). */
export async function testConnection(ctx: MethodContext, profile: string, as = profile): Promise<ConnectionTest> {
  const at = () => new Date().toISOString();
  let result: ConnectionTest;
  try {
    const me = (
      await ctx.services.call<Me>('repohost-gateway', { path: '/v1/me', headers: { 'x-identity-profile': profile } })
    ).body;
    result = { ok: true, profile: as, login: me.login, kind: me.kind, repositories: me.repositories, at: at() };
  } catch (err) {
    if (!(err instanceof ConsoleError)) throw err;
    result = { ok: false, profile: as, message: err.message, at: at() };
  }
  TESTED.set(ctx.supervisor, new Map([...(TESTED.get(ctx.supervisor) ?? []), [as, result]]));
  return result;
}

/** The last test of each connection, per running app (the guide opens with it; "Test" asks again). */
const TESTED = new WeakMap<object, Map<string, ConnectionTest>>();

/**
 * Saves a token only once it works: under a profile of its own first, tested through the gateway, then
 * under the person's profile. A token whose test fails is not kept (nor does it replace one that works)
 * unless the person says so (`keepIfFails`).
 */
async function saveConnection(
  ctx: MethodContext,
  profile: string,
  token: string,
  keepIfFails: boolean,
): Promise<ConnectionSaved> {
  const put = (name: string) =>
    ctx.services.call('identity', {
      method: 'PUT',
      path: urlPath`/v1/connections/${name}`,
      body: { kind: 'token', token },
    });
  const trial = `trial-${randomBytes(6).toString('hex')}`;
  await put(trial);
  let tested: ConnectionTest;
  try {
    tested = await testConnection(ctx, trial, profile);
  } finally {
    await ctx.services
      .call('identity', { method: 'DELETE', path: urlPath`/v1/connections/${trial}`, acceptStatus: [404] })
      .catch(() => undefined);
  }
  const kept = tested.ok || keepIfFails;
  if (kept) {
    await put(profile);
    // A connection that works answers the gateway's waiting on the platform too.
    await ctx.supervisor.recheck('repohost-gateway').catch(() => undefined);
  }
  return { ...tested, kept };
}

async function githubStep(ctx: MethodContext): Promise<GithubConnectionStep> {
  const base = { id: 'github-connection' as const, tokenUrl: TOKEN_URL, permissions: [...TOKEN_PERMISSIONS] };
  let profiles: string[];
  try {
    profiles = await connectionProfiles(ctx);
  } catch (err) {
    return {
      ...base,
      connections: [],
      done: false,
      text: 'The connections could not be listed.',
      error: (err as Error).message,
    };
  }
  if (profiles.length === 0)
    return {
      ...base,
      connections: [],
      done: false,
      text: 'No GitHub connection yet: make a fine-grained token with the permissions below and add it.',
    };
  // The last test, when there was one: reading the guide never waits on GitHub (the page tests when it has none).
  const tested = TESTED.get(ctx.supervisor)?.get(profiles[0]!);
  if (!tested)
    return {
      ...base,
      connections: profiles,
      done: false,
      untested: true,
      text: `The connection \u201c${profiles[0]}\u201d has not been tested since the app started.`,
    };
  if (!tested.ok)
    return {
      ...base,
      connections: profiles,
      done: false,
      text: `The connection \u201c${profiles[0]}\u201d does not work through the gateway.`,
      error: tested.message,
      lastTest: tested,
    };
  return {
    ...base,
    connections: profiles,
    login: tested.login,
    lastTest: tested,
    done: true,
    text: `Connected: the gateway acts as ${tested.login} (connection \u201c${profiles[0]}\u201d).`,
  };
}

async function hubCredentialStep(ctx: MethodContext): Promise<HubCredentialStep> {
  const base = { id: 'hub-credential' as const };
  try {
    const body = (await ctx.services.call<SessionCredentialList>('identity', { path: '/v1/session-credentials' })).body;
    const now = Date.now();
    const credentials = body.credentials.filter(
      (c) => !c.current && (!c.expires_at || Date.parse(c.expires_at) > now),
    ).length;
    return credentials > 0
      ? {
          ...base,
          credentials,
          done: true,
          text:
            credentials === 1 ? 'A hub credential is ready for your hub.' : `${credentials} hub credentials are valid.`,
        }
      : {
          ...base,
          credentials,
          done: false,
          text: 'No hub credential yet: make one on the Connect a hub page and give it to your hub.',
        };
  } catch (err) {
    return {
      ...base,
      credentials: 0,
      done: false,
      text: 'The hub credentials could not be listed.',
      error: (err as Error).message,
    };
  }
}

async function firstRunView(ctx: MethodContext): Promise<FirstRunView> {
  const [provider, github, hub] = await Promise.all([
    providerReady(ctx, false),
    githubStep(ctx),
    hubCredentialStep(ctx),
  ]);
  return {
    done: ctx.firstRun.firstRunDone(),
    steps: [signInStep(cliCommand(ctx), provider.ready, provider.error, ctx.openTerminal !== undefined), github, hub],
  };
}

export const FIRST_RUN_METHODS = {
  'firstRun.get': method(NoParams, async (_p, ctx): Promise<FirstRunView> => firstRunView(ctx)),
  // The provider probes its CLI again now; then the supervisor probes the provider, so its state follows at once.
  'firstRun.recheckSignIn': method(NoParams, async (_p, ctx): Promise<CliSignInStep> => {
    const provider = await providerReady(ctx, true);
    await ctx.supervisor.recheck('model-provider').catch(() => undefined);
    return signInStep(cliCommand(ctx), provider.ready, provider.error, ctx.openTerminal !== undefined);
  }),
  // The program is the supervisor's answer alone: nothing the provider's port says reaches a terminal.
  'firstRun.openTerminal': method(NoParams, async (_p, ctx): Promise<TerminalOpened> => {
    const cli = ctx.supervisor.providerCli();
    if (!cli.found) return { opened: false, message: `${cli.detail} Then sign in: run it and type ${SIGN_IN}.` };
    if (!ctx.openTerminal) {
      return {
        opened: false,
        message: `This console runs in a browser, which does not start programs: open a terminal yourself, run ${cli.path} and type ${SIGN_IN}.`,
      };
    }
    return ctx.openTerminal(cli.path);
  }),
  'firstRun.testConnection': method(
    z.object({ profile: Profile }).strict(),
    async ({ profile }, ctx): Promise<ConnectionTest> => {
      const result = await testConnection(ctx, profile);
      // A connection that works answers the gateway's waiting on the platform too.
      if (result.ok) await ctx.supervisor.recheck('repohost-gateway').catch(() => undefined);
      return result;
    },
  ),
  'firstRun.saveConnection': method(
    z
      .object({
        profile: Profile,
        token: z.string().trim().min(20, 'a personal access token is at least 20 characters').max(500),
        keepIfFails: z.boolean().optional(),
      })
      .strict(),
    async ({ profile, token, keepIfFails }, ctx): Promise<ConnectionSaved> =>
      saveConnection(ctx, profile, token, keepIfFails ?? false),
  ),
  'firstRun.setDone': method(z.object({ done: z.boolean() }).strict(), async ({ done }, ctx): Promise<FirstRunView> => {
    ctx.firstRun.setFirstRunDone(done);
    return firstRunView(ctx);
  }),
};
