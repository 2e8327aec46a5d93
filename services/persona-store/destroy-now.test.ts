import { afterEach, describe, expect, it } from 'vitest';
import { Client, field, forEachEngine, note, startTestbed, type Testbed } from './test-support/harness.ts';

let bed: Testbed | undefined;
afterEach(async () => {
  await bed?.close();
  bed = undefined;
});

async function hubClient(b: Testbed): Promise<Client> {
  const made = await fetch(`${b.identity.url}/v1/session-credentials`, {
    method: 'POST',
    headers: { authorization: `Bearer ${b.identity.localCredential}`, 'content-type': 'application/json' },
    body: JSON.stringify({ label: 'test hub' }),
  });
  const { credential } = (await made.json()) as { credential: string };
  return new Client(b.store.url, await b.identity.mint(credential, 'persona'));
}

interface Listed {
  key?: string;
  id?: string;
  forgotten?: { state: string; destroy_at: string | null };
}

forEachEngine(() => {
  describe('forgotten entries, listed and destroyed on the person\u2019s word', () => {
    it('kept entries are listed with state=forgotten; the person destroys one now, a hub may not', async () => {
      bed = await startTestbed({ PERSONA_FORGET_MODE: 'keep' });
      const c = bed.owner;
      const hub = await hubClient(bed);
      await c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' });
      await c.call('PUT', '/v1/personas/ada/fields/mood', field('calm'));
      await c.call('PUT', '/v1/personas/ada/fields/stays', field('here'));
      const n = await c.call<{ id: string }>('POST', '/v1/personas/ada/notes', note('a kept note'));
      await c.call('DELETE', '/v1/personas/ada/fields/mood');
      await c.call('DELETE', `/v1/personas/ada/notes/${n.body.id}`);

      const fields = await c.call<{ fields: Listed[] }>('GET', '/v1/personas/ada/fields?state=forgotten');
      expect(fields.body.fields.map((f) => [f.key, f.forgotten])).toEqual([
        ['mood', { state: 'kept', destroy_at: null }],
      ]);
      const notes = await c.call<{ notes: Listed[] }>('GET', '/v1/personas/ada/notes?state=forgotten');
      expect(notes.body.notes.map((x) => [x.id, x.forgotten?.state])).toEqual([[n.body.id, 'kept']]);
      // The live listing is as it was: no forgotten member.
      const live = await c.call<{ fields: Listed[] }>('GET', '/v1/personas/ada/fields');
      expect(live.body.fields.map((f) => [f.key, f.forgotten])).toEqual([['stays', undefined]]);

      const refused = await hub.call<{ detail: string }>('DELETE', '/v1/personas/ada/fields/mood?destroy=now');
      expect(refused.status).toBe(403);
      expect(refused.body.detail).toContain('own credential');
      expect((await c.call('DELETE', '/v1/personas/ada/fields/mood?destroy=now')).body).toEqual({
        outcome: 'destroyed',
      });
      expect((await c.call('DELETE', `/v1/personas/ada/notes/${n.body.id}?destroy=now`)).body).toEqual({
        outcome: 'destroyed',
      });
      expect(
        (await c.call<{ fields: Listed[] }>('GET', '/v1/personas/ada/fields?state=forgotten')).body.fields,
      ).toEqual([]);
      expect((await c.call<{ notes: Listed[] }>('GET', '/v1/personas/ada/notes?state=forgotten')).body.notes).toEqual(
        [],
      );
      // A live entry destroyed at once on the person's word, whatever the setting.
      expect((await c.call('DELETE', '/v1/personas/ada/fields/stays?destroy=now')).body).toEqual({
        outcome: 'destroyed',
      });
    });

    it('pending entries say when they will be destroyed', async () => {
      bed = await startTestbed({ PERSONA_FORGET_MODE: 'destroy_after_grace', PERSONA_GRACE_PERIOD_SECONDS: '3600' });
      const c = bed.owner;
      await c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' });
      await c.call('PUT', '/v1/personas/ada/fields/mood', field('calm'));
      await c.call('DELETE', '/v1/personas/ada/fields/mood');
      const listed = await c.call<{ fields: Listed[] }>('GET', '/v1/personas/ada/fields?state=forgotten');
      expect(listed.body.fields[0]?.forgotten?.state).toBe('pending');
      expect(Date.parse(listed.body.fields[0]!.forgotten!.destroy_at!)).toBeGreaterThan(Date.now() + 3_000_000);
    });
  });
});
