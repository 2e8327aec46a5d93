import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { METRIC_NAMES } from '../../common/activity.ts';
import { parsePrometheusText, type Sample } from '../../main/console/activity.ts';
import { ACTIONS } from './change-log.ts';
import { field, forEachEngine, note, startTestbed, type Client, type Testbed } from './test-support/harness.ts';

/**
 * The persona store's own counters at GET /metrics, read over real HTTP with the console's own parser:
 * writes by change-log action (only writes that changed something), recalls by scope, and nothing in
 * them that names a profile, key, query or content. And the identity block's `forget` member, which
 * the console's forget dialog reads.
 */

/** GET /metrics over node:http, which lets a test send any Host (fetch does not). */
function scrape(
  bed: Testbed,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; samples: Sample[] }> {
  const url = new URL('/metrics', bed.store.url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        setHost: false,
        headers: { host: url.host, ...headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode!, text, samples: res.statusCode === 200 ? parsePrometheusText(text) : [] }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The counters of one name, by the value of one label. */
function byLabel(samples: Sample[], name: string, label: string): Record<string, number> {
  return Object.fromEntries(samples.filter((s) => s.name === name).map((s) => [s.labels[label]!, s.value]));
}

/** What changed between two scrapes, by label value, leaving out what stayed. */
function moved(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after).flatMap(([k, v]) => (v === (before[k] ?? 0) ? [] : [[k, v - (before[k] ?? 0)]])),
  );
}

describe('the identity block\u2019s forget member', () => {
  let bed: Testbed;
  beforeAll(async () => {
    bed = await startTestbed();
    await bed.owner.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' });
  });
  afterAll(async () => {
    await bed?.close();
  });

  it('says what forgetting will do: the deployment\u2019s mode and grace period, as configured', async () => {
    const block = await bed.owner.call<{ forget: unknown }>('GET', '/v1/personas/ada');
    expect(block.body.forget).toEqual({ mode: 'keep', grace_period_seconds: 604_800 });
    await bed.restart({ PERSONA_FORGET_MODE: 'destroy_after_grace', PERSONA_GRACE_PERIOD_SECONDS: '3600' });
    expect((await bed.owner.call<{ forget: unknown }>('GET', '/v1/personas/ada')).body.forget).toEqual({
      mode: 'destroy_after_grace',
      grace_period_seconds: 3600,
    });
    await bed.restart({ PERSONA_FORGET_MODE: 'destroy_now' });
    expect((await bed.owner.call<{ forget: { mode: string } }>('GET', '/v1/personas/ada')).body.forget.mode).toBe(
      'destroy_now',
    );
  });

  it('is described in /openapi.json as a member of IdentityBlock', async () => {
    const doc = (await (await fetch(`${bed.store.url}/openapi.json`)).json()) as {
      components: {
        schemas: Record<string, { properties: Record<string, { properties?: object }>; required?: string[] }>;
      };
    };
    const block = doc.components.schemas.IdentityBlock!;
    expect(block.required).toContain('forget');
    expect(Object.keys(block.properties.forget!.properties!)).toEqual(['mode', 'grace_period_seconds']);
  });
});

forEachEngine(() => {
  let bed: Testbed;
  let c: Client;

  beforeAll(async () => {
    bed = await startTestbed();
    c = bed.owner;
  });
  afterAll(async () => {
    await bed?.close();
  });

  /** Runs `act`, then answers how each action's and each scope's counter moved. */
  async function countersAround(
    act: () => Promise<void>,
  ): Promise<{ writes: Record<string, number>; recalls: Record<string, number> }> {
    const before = (await scrape(bed)).samples;
    await act();
    const after = (await scrape(bed)).samples;
    return {
      writes: moved(
        byLabel(before, METRIC_NAMES.personaWrites, 'action'),
        byLabel(after, METRIC_NAMES.personaWrites, 'action'),
      ),
      recalls: moved(
        byLabel(before, METRIC_NAMES.personaRecalls, 'scope'),
        byLabel(after, METRIC_NAMES.personaRecalls, 'scope'),
      ),
    };
  }

  it('serves every action and both scopes from the start, at 0, under the names the console charts', async () => {
    const { status, samples } = await scrape(bed);
    expect(status).toBe(200);
    const writes = byLabel(samples, METRIC_NAMES.personaWrites, 'action');
    expect(Object.keys(writes).sort()).toEqual([...ACTIONS].sort());
    expect(Object.values(writes).every((v) => v === 0)).toBe(true);
    expect(byLabel(samples, METRIC_NAMES.personaRecalls, 'scope')).toEqual({ persona: 0, all: 0 });
    for (const s of samples.filter((s) => s.name.startsWith('persona_')))
      expect(s.labels.service).toBe('persona-store');
  });

  it('counts each write that changed something once, by its change-log action, and never one that changed nothing', async () => {
    expect(
      (
        await countersAround(
          async () => void (await c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' })),
        )
      ).writes,
    ).toEqual({ persona_created: 1 });
    expect(
      (await countersAround(async () => void (await c.call('PUT', '/v1/personas/ada/fields/city', field('Lisbon')))))
        .writes,
    ).toEqual({ field_set: 1 });
    // An identical retry records no change-log entry, so it is no write.
    expect(
      (await countersAround(async () => void (await c.call('PUT', '/v1/personas/ada/fields/city', field('Lisbon')))))
        .writes,
    ).toEqual({});
    expect(
      (await countersAround(async () => void (await c.call('PUT', '/v1/personas/ada/fields/city', field('Porto')))))
        .writes,
    ).toEqual({ field_revised: 1 });
    expect(
      (
        await countersAround(
          async () => void (await c.call('PUT', '/v1/personas/ada/fields/city', field('Porto', { pinned: true }))),
        )
      ).writes,
    ).toEqual({ field_pinned: 1 });
    expect(
      (await countersAround(async () => void (await c.call('PATCH', '/v1/personas/ada', { tone: 'dry' })))).writes,
    ).toEqual({ persona_updated: 1 });
    expect(
      (await countersAround(async () => void (await c.call('PATCH', '/v1/personas/ada', { tone: 'dry' })))).writes,
    ).toEqual({});

    let id = '';
    const added = await countersAround(async () => {
      id = (
        await c.call<{ id: string }>('POST', '/v1/personas/ada/notes', note('walks by the river'), {
          'idempotency-key': 'k1',
        })
      ).body.id;
      // The same Idempotency-Key returns the first note: nothing new is written.
      expect(
        (await c.call('POST', '/v1/personas/ada/notes', note('walks by the river'), { 'idempotency-key': 'k1' }))
          .status,
      ).toBe(200);
    });
    expect(added.writes).toEqual({ note_added: 1 });
    expect(
      (
        await countersAround(
          async () => void (await c.call('PATCH', `/v1/personas/ada/notes/${id}`, { content: 'walks by the sea' })),
        )
      ).writes,
    ).toEqual({ note_revised: 1 });
    expect(
      (await countersAround(async () => void (await c.call('DELETE', `/v1/personas/ada/notes/${id}`)))).writes,
    ).toEqual({ note_forgotten: 1 });
    expect(
      (await countersAround(async () => void (await c.call('DELETE', '/v1/personas/ada/fields/city')))).writes,
    ).toEqual({ field_forgotten: 1 });
  });

  it('counts no refused or failed write: credentials, bad input, a missing persona, a conflict', async () => {
    const refused = await countersAround(async () => {
      expect(
        (await c.call('PUT', '/v1/personas/ada/fields/token', field('ghp_0123456789abcdefghijABCDEFGHIJ012345')))
          .status,
      ).toBe(422);
      expect((await c.call('PUT', '/v1/personas/ada/fields/city', { value: 'no description' })).status).toBe(422);
      expect((await c.call('PUT', '/v1/personas/nobody/fields/city', field('Lisbon'))).status).toBe(404);
      expect((await c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada again' })).status).toBe(409);
    });
    expect(refused.writes).toEqual({});
  });

  it('counts a recall by its scope once it is answered, and not one of a missing persona', async () => {
    const one = await countersAround(async () => {
      expect((await c.call('GET', '/v1/personas/ada/recall?q=sea')).status).toBe(200);
      expect((await c.call('GET', '/v1/personas/nobody/recall?q=sea')).status).toBe(404);
    });
    expect(one.recalls).toEqual({ persona: 1 });
    const all = await countersAround(async () => {
      expect((await c.call('GET', '/v1/recall?q=river')).status).toBe(200);
      expect((await c.call('GET', '/v1/recall?q=river&limit=2')).status).toBe(200);
    });
    expect(all).toEqual({ writes: {}, recalls: { all: 2 } });
  });

  it('counts a destruction the caller asks for, but not the sweeper\u2019s when a grace period ends', async () => {
    await bed.restart({ PERSONA_FORGET_MODE: 'destroy_after_grace', PERSONA_GRACE_PERIOD_SECONDS: '60' });
    c = bed.owner;
    await c.call('PUT', '/v1/personas/ada/fields/mood', field('calm'));
    expect(
      (await countersAround(async () => void (await c.call('DELETE', '/v1/personas/ada/fields/mood')))).writes,
    ).toEqual({ field_forgotten: 1 });
    const swept = await countersAround(async () => {
      bed.clock.advance(61_000);
      expect(await bed.store.sweep()).toBe(1);
    });
    expect(swept.writes).toEqual({});
    await c.call('PUT', '/v1/personas/ada/fields/mood', field('calm'));
    await c.call('DELETE', '/v1/personas/ada/fields/mood');
    // A PUT of a pending key destroys the old field at once and sets the key afresh: two changes, two writes.
    expect(
      (await countersAround(async () => void (await c.call('PUT', '/v1/personas/ada/fields/mood', field('cheerful')))))
        .writes,
    ).toEqual({
      field_destroyed: 1,
      field_set: 1,
    });
    expect((await countersAround(async () => void (await c.call('DELETE', '/v1/personas/ada')))).writes).toEqual({
      persona_deleted: 1,
    });
  });

  it('carries no profile, key, query, content or token in /metrics, whatever was written and searched', async () => {
    const marker = 'Zq7wexlqmarker';
    const profile = `${marker}-profile`;
    await c.call('POST', '/v1/personas', { profile, display_name: `${marker} name` });
    await c.call(
      'PUT',
      `/v1/personas/${profile}/fields/${marker}_key`,
      field(`${marker} value`, { description: `${marker} description` }),
    );
    await c.call('POST', `/v1/personas/${profile}/notes`, note(`${marker} note`), {
      'idempotency-key': `${marker}-idem`,
    });
    await c.call('GET', `/v1/personas/${profile}/recall?q=${marker}`);
    await c.call('GET', `/v1/recall?q=${marker}`);
    await c.call('GET', `/v1/personas/${profile}/fields/${marker}_missing`);
    const { text, samples } = await scrape(bed);
    expect(text.toLowerCase()).not.toContain(marker.toLowerCase());
    expect(text).not.toContain(c.token);
    // Every label value of the store's own counters is one it declared.
    for (const s of samples.filter((s) => s.name === METRIC_NAMES.personaWrites))
      expect(ACTIONS).toContain(s.labels.action);
    for (const s of samples.filter((s) => s.name === METRIC_NAMES.personaRecalls))
      expect(['persona', 'all']).toContain(s.labels.scope);
    // The HTTP counters name the route's template, never the path sent.
    const routes = new Set(samples.filter((s) => s.name === METRIC_NAMES.requests).map((s) => s.labels.route));
    expect(routes).toContain('/v1/personas/{profile}/fields/{key}');
    expect(routes).toContain('/v1/personas/{profile}/recall');
  });

  it('answers /metrics to this machine only: a proxy\u2019s forwarding header or another Host is refused', async () => {
    const forwarded = await scrape(bed, { 'x-forwarded-for': '203.0.113.7' });
    expect(forwarded.status).toBe(403);
    expect(forwarded.text).toMatch(/answers only on this machine/);
    expect((await scrape(bed, { host: 'persona.example.com' })).status).toBe(421);
  });
});
