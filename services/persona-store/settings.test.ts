import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../test/support/identity.ts';
import { ConfigError } from '../kit/config.ts';
import { startPersonaStore } from './service.ts';
import { forEachEngine, field, startTestbed, type Client, type Testbed } from './test-support/harness.ts';

forEachEngine(() => {
  const SETTINGS_TOKEN = 'settings-service-token-for-tests';

  /** A small real settings service: per-account answers, and a switch to make it fail. */
  class SettingsService {
    server: Server;
    url = '';
    byAccount = new Map<string, unknown>();
    failWith: number | undefined;
    seen: { path: string; authorization: string | undefined }[] = [];
    constructor() {
      this.server = createServer((req, res) => {
        this.seen.push({ path: req.url ?? '', authorization: req.headers.authorization });
        const url = new URL(req.url ?? '/', 'http://x');
        if (req.headers.authorization !== `Bearer ${SETTINGS_TOKEN}`) return void res.writeHead(401).end();
        if (this.failWith) return void res.writeHead(this.failWith).end('{}');
        if (url.pathname !== '/v1/settings/persona') return void res.writeHead(404).end();
        const settings = this.byAccount.get(url.searchParams.get('account') ?? '');
        if (!settings)
          return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"no settings"}');
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(settings));
      });
    }
    async start() {
      await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
      this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    }
  }

  let settings: SettingsService;
  let bed: Testbed;
  let c: Client;
  let account: string;

  beforeAll(async () => {
    settings = new SettingsService();
    await settings.start();
    bed = await startTestbed({
      PERSONA_SETTINGS_API_BASE_URL: settings.url,
      PERSONA_SETTINGS_API_TOKEN: SETTINGS_TOKEN,
      PERSONA_PIN_CAP_FIELDS: '3',
      PERSONA_PAGE_SIZE: '5',
    });
    c = bed.owner;
    account = decodeJwt(c.token).sub!;
    await c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' });
  });
  afterAll(async () => {
    await bed?.close();
    settings?.server.close();
  });

  describe('the settings service', () => {
    it('is asked for the caller\u2019s persona namespace with the service\u2019s own token', async () => {
      settings.seen = [];
      await c.call('GET', '/v1/personas/ada');
      expect(settings.seen).toEqual([
        {
          path: `/v1/settings/persona?account=${encodeURIComponent(account)}`,
          authorization: `Bearer ${SETTINGS_TOKEN}`,
        },
      ]);
    });

    it('with no settings for the person (404), the deployment\u2019s configuration applies: forgetting keeps', async () => {
      await c.call('PUT', '/v1/personas/ada/fields/kept_one', field(1));
      expect((await c.call('DELETE', '/v1/personas/ada/fields/kept_one')).body).toEqual({ outcome: 'kept' });
    });

    it('applies the person\u2019s forget mode and lowered caps', async () => {
      settings.byAccount.set(account, {
        forget_mode: 'destroy_now',
        pin_cap_fields: 1,
        page_size: 2,
        keep_replaced_values: true,
      });
      await c.call('PUT', '/v1/personas/ada/fields/a', field(1, { pinned: true }));
      const second = await c.call('PUT', '/v1/personas/ada/fields/b', field(2, { pinned: true }));
      expect(second.status).toBe(409);
      expect(second.text).toMatch(/pin cap 1/);
      await c.call('PUT', '/v1/personas/ada/fields/b', field(2));
      await c.call('PUT', '/v1/personas/ada/fields/c', field(3));
      expect(
        (await c.call<{ fields: unknown[]; next_after: string }>('GET', '/v1/personas/ada/fields')).body.fields,
      ).toHaveLength(2);
      const over = await c.call('GET', '/v1/personas/ada/fields?limit=3');
      expect(over.status).toBe(422);
      expect(over.body.detail).toMatch(
        /^query member limit is 3, over the page size 2 \(your own page size setting, lower than this deployment\u2019s 5\)/,
      );
      expect((await c.call('GET', '/v1/personas/ada')).body.pin_caps).toEqual({ fields: 1, notes: 25 });
      expect((await c.call('DELETE', '/v1/personas/ada/fields/c')).body).toEqual({ outcome: 'destroyed' });
    });

    it('never lets a person raise a cap above the deployment\u2019s', async () => {
      settings.byAccount.set(account, { pin_cap_fields: 100, page_size: 1000 });
      expect((await c.call('GET', '/v1/personas/ada')).body.pin_caps).toEqual({ fields: 3, notes: 25 });
      for (const k of ['d', 'e', 'f', 'g']) await c.call('PUT', `/v1/personas/ada/fields/${k}`, field(k));
      expect((await c.call<{ fields: unknown[] }>('GET', '/v1/personas/ada/fields')).body.fields).toHaveLength(5);
      const over = await c.call('GET', '/v1/personas/ada/fields?limit=1000');
      expect(over.status).toBe(422);
      expect(over.body.detail).toMatch(/over the page size 5 \(this deployment\u2019s PERSONA_PAGE_SIZE\)/);
    });

    it('refuses with 503, saying why, and forgets nothing when the settings service fails or answers nonsense', async () => {
      await c.call('PUT', '/v1/personas/ada/fields/survivor', field('still here'));
      settings.failWith = 500;
      const r = await c.call('DELETE', '/v1/personas/ada/fields/survivor');
      expect(r.status).toBe(503);
      expect(r.body.detail).toMatch(/settings service answered 500/);
      settings.failWith = undefined;
      settings.byAccount.set(account, { forget_mode: 'shred' });
      expect((await c.call('DELETE', '/v1/personas/ada/fields/survivor')).status).toBe(503);
      settings.byAccount.delete(account);
      expect((await c.call('GET', '/v1/personas/ada/fields/survivor')).body).toMatchObject({ value: 'still here' });
    });

    it('is read by every token operation: while it fails, each of the 19 answers 503 and nothing changes', async () => {
      await c.call('POST', '/v1/personas', { profile: 'outage', display_name: 'Outage' });
      await c.call('PUT', '/v1/personas/outage/fields/kept', field('before the outage'));
      const noteId = (
        await c.call('POST', '/v1/personas/outage/notes', {
          content: 'a note from before',
          kind: 'episode',
          source: 'owner',
        })
      ).body.id as string;
      const state = async () =>
        JSON.stringify([
          (await c.call('GET', '/v1/personas/outage/export')).body,
          (await c.call('GET', '/v1/personas/outage/events')).body,
          (await c.call('GET', '/v1/personas')).body,
        ]);
      const before = await state();
      const operations: [string, string, string, unknown?][] = [
        ['list_personas', 'GET', '/v1/personas'],
        ['create_persona', 'POST', '/v1/personas', { profile: 'during', display_name: 'During' }],
        ['get_persona', 'GET', '/v1/personas/outage'],
        ['update_persona', 'PATCH', '/v1/personas/outage', { display_name: 'Changed' }],
        ['delete_persona', 'DELETE', '/v1/personas/outage'],
        ['put_field', 'PUT', '/v1/personas/outage/fields/kept', field('during the outage')],
        ['get_field', 'GET', '/v1/personas/outage/fields/kept'],
        ['list_fields', 'GET', '/v1/personas/outage/fields'],
        ['forget_field', 'DELETE', '/v1/personas/outage/fields/kept'],
        ['describe_persona_schema', 'GET', '/v1/personas/outage/fields/_schema'],
        ['add_note', 'POST', '/v1/personas/outage/notes', { content: 'during', kind: 'episode', source: 'owner' }],
        ['list_notes', 'GET', '/v1/personas/outage/notes'],
        ['get_note', 'GET', `/v1/personas/outage/notes/${noteId}`],
        ['revise_note', 'PATCH', `/v1/personas/outage/notes/${noteId}`, { content: 'rewritten' }],
        ['forget_note', 'DELETE', `/v1/personas/outage/notes/${noteId}`],
        ['recall', 'GET', '/v1/personas/outage/recall?q=outage'],
        ['recall_all', 'GET', '/v1/recall?q=outage'],
        ['export_persona', 'GET', '/v1/personas/outage/export'],
        ['list_events', 'GET', '/v1/personas/outage/events'],
      ];
      expect(operations).toHaveLength(19);
      settings.failWith = 500;
      try {
        for (const [op, method, path, body] of operations) {
          settings.seen = [];
          const r = await c.call(method, path, body);
          expect(r.status, op).toBe(503);
          expect(r.body.detail, op).toMatch(/settings service answered 500/);
          expect(settings.seen, op).toHaveLength(1);
        }
      } finally {
        settings.failWith = undefined;
      }
      expect(await state()).toBe(before);
    });

    it('refuses with 503 when the settings service cannot be reached', async () => {
      const down = await startTestbed(
        { PERSONA_SETTINGS_API_BASE_URL: 'http://127.0.0.1:9', PERSONA_SETTINGS_API_TOKEN: SETTINGS_TOKEN },
        bed.identity,
      );
      try {
        const r = await down.owner.call('GET', '/v1/personas');
        expect(r.status).toBe(503);
        expect(r.body.detail).toMatch(/could not be reached/);
      } finally {
        await down.close();
      }
    });

    it('stops startup when only one of the two settings variables is set', async () => {
      await expect(
        startPersonaStore({ PERSONA_PORT: '0', PERSONA_DATA_DIR: bed.dataDir, PERSONA_SETTINGS_API_TOKEN: 'x' }),
      ).rejects.toThrow(ConfigError);
      await expect(
        startPersonaStore({ PERSONA_PORT: '0', PERSONA_DATA_DIR: bed.dataDir, PERSONA_FORGOT_MODE: 'keep' }),
      ).rejects.toThrow(/PERSONA_FORGOT_MODE/);
    });
  });

  describe('readiness', () => {
    it('/ready answers 503 naming the identity keys and socket when no identity has run where they are looked for', async () => {
      const nowhere = tempDir('no-identity');
      const orphan = await startTestbed(
        {
          PERSONA_IDENTITY_KEYS_FILE: join(nowhere, 'public-keys.json'),
          PERSONA_IDENTITY_SOCKET: join(nowhere, 'identity.sock'),
        },
        bed.identity,
      );
      try {
        const res = await fetch(`${orphan.store.url}/ready`);
        expect(res.status).toBe(503);
        const body = (await res.json()) as { detail: string; checks: Record<string, string> };
        expect(body.checks).toMatchObject({ identity_keys: 'failing', identity: 'failing' });
        expect(body.detail).toMatch(/identity service/);
      } finally {
        await orphan.close();
      }
    });
  });
});
