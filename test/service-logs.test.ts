import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogLine } from '../common/contract.ts';
import { ServiceSupervisor } from '../main/supervisor/supervisor.ts';
import { tempDir } from './support/identity.ts';
import { freePort } from './support/process.ts';

// The log path end to end: a real identity and persona store started by the supervisor, real requests, the lines read back
// through `logPage` and `logs`, the two calls the console's Services page makes.
let supervisor: ServiceSupervisor;

beforeAll(async () => {
  supervisor = new ServiceSupervisor({
    dataDir: tempDir('service-logs'),
    services: ['identity', 'persona-store'],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      IDENTITY_PORT: String(await freePort()),
      PERSONA_PORT: String(await freePort()),
    },
    // A loaded machine may take long to start a service or to answer a probe; neither is what these tests are about.
    startTimeoutMs: 150_000,
    probeTimeoutMs: 15_000,
  });
  await supervisor.startAll();
  const settled = await supervisor.waitUntilSettled(undefined, 180_000);
  expect(settled.map((s) => s.state)).toEqual(['ready', 'ready']);
});

afterAll(async () => {
  await supervisor?.close();
});

/**
 * Resolves with the first persona-store line that satisfies `test`, and the newest page of the log as the console
 * would have read it at that moment (so "at the top" is judged without racing later lines).
 */
function nextLine(test: (line: LogLine) => boolean): Promise<{ line: LogLine; top: LogLine | undefined }> {
  return new Promise((resolve) => {
    const on = (line: LogLine) => {
      if (line.service !== 'persona-store' || !test(line)) return;
      supervisor.off('log', on);
      resolve({ line, top: supervisor.logPage('persona-store', { limit: 1 }).lines[0] });
    };
    supervisor.on('log', on);
  });
}

/** A unique path segment of plain lower-case words: nothing a credential screen would take for a token. */
const plainMark = (): string => `late-${[...randomBytes(8)].map((b) => String.fromCharCode(97 + (b % 26))).join('')}`;

async function personaToken(): Promise<string> {
  const minted = await fetch(`${supervisor.url('identity')}/v1/auth/service-token`, {
    method: 'POST',
    headers: { authorization: `Bearer ${await supervisor.localCredential()}`, 'content-type': 'application/json' },
    body: JSON.stringify({ audience: 'persona' }),
  });
  expect(minted.status).toBe(200);
  return ((await minted.json()) as { token: string }).token;
}

describe('a service’s request lines reach the console’s log view', { timeout: 240_000 }, () => {
  it('a PUT that answered 200, then a GET that answered 401, each at the top of the log as soon as it is written', async () => {
    const token = await personaToken();
    const mark = plainMark();
    const field = `/v1/personas/${mark}/fields/tea`;
    const created = await fetch(`${supervisor.url('persona-store')}/v1/personas`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ profile: mark, display_name: 'Juniper' }),
    });
    expect(created.status).toBe(201);
    // The line names the route as declared, never the path sent (a key names what a field holds).
    const route = '"path":"/v1/personas/{profile}/fields/{key}"';
    const written = nextLine(
      (l) => l.text.includes(route) && l.text.includes('"method":"PUT"') && l.text.includes('"status":200'),
    );
    const put = await fetch(`${supervisor.url('persona-store')}${field}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ description: 'The tea the household likes', value: 'Assam', source: 'owner' }),
    });
    expect(put.status).toBe(200);
    const first = await written;
    expect(first.top).toEqual(first.line);

    const refusedLine = nextLine((l) => l.text.includes(route) && l.text.includes('"status":401'));
    expect((await fetch(`${supervisor.url('persona-store')}${field}`)).status).toBe(401);
    const second = await refusedLine;
    expect(second.top).toEqual(second.line);
    expect(second.line.seq).toBeGreaterThan(first.line.seq);

    expect(first.line.text).not.toContain(mark);
    // Read back as the console reads it: newest first, probes left out, the filter on the route.
    const page = supervisor.logPage('persona-store', { filter: '/fields/{key}' });
    expect(page.lines.map((l) => l.seq)).toEqual([second.line.seq, first.line.seq]);
    expect(supervisor.logPage('persona-store', { filter: mark }).lines).toEqual([]);
    expect(supervisor.logs('persona-store', { filter: '/fields/{key}' }).map((l) => l.seq)).toEqual([
      first.line.seq,
      second.line.seq,
    ]);
    const following = supervisor.logPage('persona-store', { after: first.line.seq });
    expect(following.lines.map((l) => l.seq)).toContain(second.line.seq);
  });

  it('a path segment the persona store takes for a credential never reaches the line, so a filter for it finds nothing', async () => {
    // A segment with a timestamp (16+ characters, digits in a run) is what secretlint would read.
    const mark = plainMark();
    const secretShaped = `follow-${Date.now()}`;
    const arrived = nextLine(
      (l) => l.text.includes('"path":"/v1/personas/{profile}/fields/{key}"') && l.text.includes('"method":"DELETE"'),
    );
    const path = `/v1/personas/${mark}/fields/${secretShaped}`;
    expect((await fetch(`${supervisor.url('persona-store')}${path}`, { method: 'DELETE' })).status).toBe(401);
    const { line, top } = await arrived;
    expect(top).toEqual(line);
    expect(line.text).not.toContain(secretShaped);
    expect(line.text).not.toContain(mark);
    expect(supervisor.logPage('persona-store', { filter: secretShaped }).lines).toEqual([]);
  });
});
