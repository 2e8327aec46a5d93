/**
 * What the overview asks a person to act on, from the provider's own /ready bodies: no CLI, not signed
 * in, lockdown not proven; nothing while the probe still runs.
 */
import { describe, expect, it } from 'vitest';
import type { LockdownCheck, LoginCheck, Readiness } from '../../services/model-provider/shapes.ts';
import { providerAttention } from './overview.ts';

const FOUND: Readiness['checks']['cli'] = { ok: true, path: '/usr/bin/claude', source: 'PATH' };
const LOCKED: LockdownCheck = {
  ok: true,
  state: 'ok',
  tools: [],
  mcp_servers: [],
  hooks: [],
  probed_at: '2026-11-26T08:00:00.000Z',
  detail: 'No tools, MCP servers or hooks.',
};
const SIGNED_IN: LoginCheck = { ok: true, state: 'signed_in' };

/** A /ready body's checks, each as the provider words it, with the parts a case changes. */
function checks(part: {
  cli?: Readiness['checks']['cli'];
  lockdown?: Partial<LockdownCheck>;
  login?: LoginCheck;
}): Pick<Readiness, 'checks'> {
  return {
    checks: { cli: part.cli ?? FOUND, lockdown: { ...LOCKED, ...part.lockdown }, login: part.login ?? SIGNED_IN },
  };
}

describe('the provider on the overview', () => {
  it('a ready provider needs nothing', () => {
    expect(providerAttention(checks({}))).toEqual([]);
  });

  it('a probe still running is not a failure yet', () => {
    expect(
      providerAttention(checks({ lockdown: { ok: false, state: 'pending' }, login: { ok: true, state: 'unknown' } })),
    ).toEqual([]);
  });

  it('no CLI, not signed in, not locked down: each says what to do, on the provider page', () => {
    const noCli = providerAttention(
      checks({
        cli: { ok: false, path: null, detail: 'No CLI on PATH; install it or set MODELPROV_CLI_BINARY' },
        lockdown: { ok: false, state: 'no_cli' },
        login: { ok: true, state: 'unknown' },
      }),
    );
    expect(noCli).toEqual([
      {
        severity: 'error',
        place: 'provider',
        text: 'The chat-model provider finds no CLI: No CLI on PATH; install it or set MODELPROV_CLI_BINARY.',
      },
    ]);
    const signedOut = providerAttention(
      checks({ login: { ok: false, state: 'not_signed_in', detail: 'The CLI is not signed in.' } }),
    );
    expect(signedOut.map((a) => a.text)).toEqual([
      'The CLI is not signed in, so the provider cannot answer: run it once in a terminal and sign in (/login).',
    ]);
    const open = providerAttention(
      checks({ lockdown: { ok: false, state: 'not_ok', detail: 'the CLI loaded tools: Bash' } }),
    );
    expect(open.map((a) => a.text)).toEqual([
      'The provider is not locked down, so it runs nothing: the CLI loaded tools: Bash.',
    ]);
  });
});
