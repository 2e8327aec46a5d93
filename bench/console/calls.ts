/**
 * The console: how long the renderer build takes (the headless console builds it at start), how big it
 * is, and what a console API call over the HTTP transport costs against the real services, compared
 * with calling the persona store directly with a token.
 */
import { gzipSync } from 'node:zlib';
import { startConsoleServer } from '../../main/console/server.ts';
import { buildRenderer } from '../../renderer/build.ts';
import { seedConsoleData, startConsoleStack } from '../../test/support/console-stack.ts';
import { ms, summarize, time } from '../stats.ts';

const [cold, first] = await time(() => buildRenderer());
const warm: number[] = [];
for (let i = 0; i < 10; i++) warm.push((await time(() => buildRenderer()))[0]);
const js = first.files['app.js']!.body;

const stack = await startConsoleStack();
try {
  const { supervisor } = stack;
  const credential = await supervisor.localCredential();
  const seeded = await seedConsoleData({
    identityUrl: supervisor.url('identity'),
    personaUrl: supervisor.url('persona-store'),
    gatewayUrl: supervisor.url('repohost-gateway'),
    credential,
    platform: stack.platform,
  });
  const server = await startConsoleServer({ supervisor, port: 0 });
  const consoleUrl = new URL(server.url);
  const call = async (method: string, params?: unknown) => {
    const res = await fetch(`${consoleUrl.origin}/api/call`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-console-secret': new URLSearchParams(consoleUrl.hash.slice(1)).get('secret')!,
      },
      body: JSON.stringify({ method, params }),
    });
    const result = (await res.json()) as { ok: boolean; error?: { message: string } };
    if (!result.ok) throw new Error(`${method}: ${result.error?.message}`);
  };
  const N = 300;
  const measure = async (fn: () => Promise<unknown>) => {
    for (let i = 0; i < 20; i++) await fn();
    const samples: number[] = [];
    for (let i = 0; i < N; i++) samples.push((await time(fn))[0]);
    return summarize(samples);
  };
  const token = (
    (await (
      await fetch(`${supervisor.url('identity')}/v1/auth/service-token`, {
        method: 'POST',
        headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
        body: JSON.stringify({ audience: 'persona' }),
      })
    ).json()) as { token: string }
  ).token;
  const direct = await measure(async () => {
    const res = await fetch(`${supervisor.url('persona-store')}/v1/personas/${seeded.profile}/fields`, {
      headers: { authorization: `Bearer ${token}` },
    });
    await res.text();
  });
  const rows: [string, ReturnType<typeof summarize>][] = [
    ['services.list (supervisor only)', await measure(() => call('services.list'))],
    ['personas.fields (persona store)', await measure(() => call('personas.fields', { profile: seeded.profile }))],
    ['  the same read, direct with a token', direct],
    ['subscriptions.list (identity + gateway)', await measure(() => call('subscriptions.list'))],
    ['provider.status (provider, two reads)', await measure(() => call('provider.status'))],
  ];
  await server.close();

  console.log('console');
  console.log(`  renderer build: first ${ms(cold)}, then p50 ${ms(summarize(warm).p50)}`);
  console.log(
    `  app.js ${(js.length / 1024).toFixed(1)} KiB (${(gzipSync(js).length / 1024).toFixed(1)} KiB gzipped), app.css ${(first.files['app.css']!.body.length / 1024).toFixed(1)} KiB`,
  );
  console.log(`  console API calls over HTTP (${N} each, after 20 warm-up calls):`);
  for (const [name, s] of rows)
    console.log(`    ${name.padEnd(42)} p50 ${ms(s.p50)}  p95 ${ms(s.p95)}  p99 ${ms(s.p99)}`);
} finally {
  await stack.close();
}
