/**
 * What the overview asks a person to act on, from the provider's own /ready bodies: no CLI, not signed
 * in, lockdown not proven; nothing while the probe still runs.
 */
import { describe, expect, it } from 'vitest';
import { providerAttention } from './overview.ts';

describe('the provider on the overview', () => {
  it('a ready provider needs nothing', () => {
    expect(providerAttention({ checks: { cli: { ok: true }, lockdown: { ok: true, state: 'ok' }, login: { state: 'signed_in' } } })).toEqual([]);
  });

  it('a probe still running is not a failure yet', () => {
    expect(providerAttention({ checks: { cli: { ok: true }, lockdown: { ok: false, state: 'pending' }, login: { state: 'unknown' } } })).toEqual([]);
  });

  it('no CLI, not signed in, not locked down: each says what to do, on the provider page', () => {
    const noCli = providerAttention({ checks: { cli: { ok: false, detail: 'No CLI on PATH; install it or set MODELPROV_CLI_BINARY' }, lockdown: { ok: false, state: 'no_cli' } } });
    expect(noCli).toEqual([{ severity: 'error', place: 'provider', text: 'The chat-model provider finds no CLI: No CLI on PATH; install it or set MODELPROV_CLI_BINARY.' }]);
    const signedOut = providerAttention({ checks: { cli: { ok: true }, lockdown: { ok: true, state: 'ok' }, login: { state: 'not_signed_in' } } });
    expect(signedOut.map((a) => a.text)).toEqual(['The CLI is not signed in, so the provider cannot answer: run it once in a terminal and sign in (/login).']);
    const open = providerAttention({ checks: { cli: { ok: true }, lockdown: { ok: false, state: 'not_ok', detail: 'the CLI loaded tools: Bash' }, login: { state: 'signed_in' } } });
    expect(open.map((a) => a.text)).toEqual(['The provider is not locked down, so it runs nothing: the CLI loaded tools: Bash.']);
  });
});
