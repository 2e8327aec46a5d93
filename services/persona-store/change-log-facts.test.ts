import { afterEach, describe, expect, it } from 'vitest';
import { Client, field, forEachEngine, note, startTestbed, type Testbed } from './test-support/harness.ts';

let bed: Testbed | undefined;
afterEach(async () => {
  await bed?.close();
  bed = undefined;
});

interface Entry {
  action: string;
  target: string;
  asserted_by: string;
  via: string | null;
}

/** A hub credential made at the real identity with the app's own credential, as the console does. */
async function hubClient(b: Testbed): Promise<Client> {
  const made = await fetch(`${b.identity.url}/v1/session-credentials`, {
    method: 'POST',
    headers: { authorization: `Bearer ${b.identity.localCredential}`, 'content-type': 'application/json' },
    body: JSON.stringify({ label: 'test hub' }),
  });
  expect(made.status).toBe(201);
  const { credential } = (await made.json()) as { credential: string };
  return new Client(b.store.url, await b.identity.mint(credential, 'persona'));
}

forEachEngine(() => {
  describe('the change log records how each change came in', () => {
    it('the person\u2019s own credential is "owner", a hub credential\u2019s token "hub", the sweeper "store"; asserted_by stays the audience', async () => {
      bed = await startTestbed({
        PERSONA_FORGET_MODE: 'destroy_after_grace',
        PERSONA_GRACE_PERIOD_SECONDS: '60',
        PERSONA_SWEEP_INTERVAL_SECONDS: '1',
      });
      const hub = await hubClient(bed);
      await bed.owner.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' });
      await hub.call('PUT', '/v1/personas/ada/fields/mood', field('calm'));
      await bed.owner.call('PUT', '/v1/personas/ada/fields/mood', field('calm', { pinned: true }));
      const added = await hub.call<{ id: string }>('POST', '/v1/personas/ada/notes', note('a note'));
      await bed.owner.call('DELETE', `/v1/personas/ada/notes/${added.body.id}`);

      const log = await bed.owner.call<{ events: Entry[] }>('GET', '/v1/personas/ada/events');
      expect(log.body.events.map((e) => [e.action, e.asserted_by, e.via])).toEqual([
        ['persona_created', 'persona', 'owner'],
        ['field_set', 'persona', 'hub'],
        ['field_pinned', 'persona', 'owner'],
        ['note_added', 'persona', 'hub'],
        ['note_forgotten', 'persona', 'owner'],
      ]);

      bed.clock.advance(61_000);
      expect(await bed.store.sweep()).toBe(1);
      const destroyed = await bed.owner.call<{ events: Entry[] }>(
        'GET',
        '/v1/personas/ada/events?action=note_destroyed',
      );
      expect(destroyed.body.events.map((e) => [e.asserted_by, e.via])).toEqual([['persona-store', 'store']]);
    });
  });
});
