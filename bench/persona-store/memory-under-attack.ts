/**
 * The persona store's memory under the audit's attack (issue 10): a real service process, one token
 * holder sending change-log requests whose filters make a new SQL text each time (action lists one
 * longer each time, repeats included, then the same with other filters added), and one token sent
 * under a thousand spellings of its header. Prints the process's resident memory (VmRSS) after each
 * round and the answers it gave. Run it in a checkout of an earlier commit for the figure before.
 *
 *   npx tsx bench/persona-store/memory-under-attack.ts        (or: npm run bench -- persona-store)
 */
import { rmSync } from 'node:fs';
import { startTestIdentity, tempDir } from '../../test/support/identity.ts';
import { freePort, spawnService } from '../../test/support/process.ts';
import { rss } from '../stats.ts';

const ACTIONS = [
  'persona_created',
  'persona_updated',
  'field_set',
  'field_revised',
  'note_added',
  'note_revised',
  'field_forgotten',
  'note_forgotten',
];
/** Longest list sent: 1,000 actions, about 14 KB, within Node's 16 KB of request head. */
const LONGEST = 1_000;

const identity = await startTestIdentity();
const dataDir = tempDir('persona-memory-bench');
const port = await freePort();
const service = await spawnService(
  'persona-store',
  {
    PERSONA_PORT: String(port),
    PERSONA_DATA_DIR: dataDir,
    ...identity.trust('PERSONA_'),
    PERSONA_LOG_LEVEL: 'warn',
  },
  port,
);
try {
  const token = await identity.mint(identity.localCredential, 'persona');
  const pid = service.child.pid!;
  const call = async (path: string, authorization = `Bearer ${token}`, init: RequestInit = {}) => {
    const res = await fetch(`${service.url}${path}`, {
      ...init,
      headers: { authorization, 'content-type': 'application/json', ...(init.headers as Record<string, string>) },
    });
    await res.arrayBuffer();
    return res.status;
  };
  await call('/v1/personas', undefined, {
    method: 'POST',
    body: JSON.stringify({ profile: 'ada', display_name: 'Ada' }),
  });
  for (let i = 0; i < 20; i++)
    await call(`/v1/personas/ada/fields/f${i}`, undefined, {
      method: 'PUT',
      body: JSON.stringify({ description: 'd', value: i, source: 'owner' }),
    });
  for (let i = 0; i < 300; i++) await call('/v1/personas/ada/events?action=field_set'); // warm-up: everything a normal client touches
  console.log(`persona store (pid ${pid}), resident memory (VmRSS) after each round`);
  console.log(`${'round'.padEnd(72)} ${'RSS'.padStart(8)}   answers`);
  console.log(`${'after start and 300 ordinary change-log reads'.padEnd(72)} ${rss(pid).padStart(8)}`);

  const round = async (name: string, paths: Iterable<[string, string?]>) => {
    const answers = new Map<number, number>();
    for (const [path, authorization] of paths) {
      const status = await call(path, authorization);
      answers.set(status, (answers.get(status) ?? 0) + 1);
    }
    const summary = [...answers].map(([status, n]) => `${n}x ${status}`).join(', ');
    console.log(`${name.padEnd(72)} ${rss(pid).padStart(8)}   ${summary}`);
  };
  const list = (n: number) => Array.from({ length: n }, (_, k) => ACTIONS[k % ACTIONS.length]).join(',');
  function* growing(extra: string): Iterable<[string]> {
    for (let n = 1; n <= LONGEST; n++) yield [`/v1/personas/ada/events?action=${list(n)}${extra}`];
  }

  await round(`${LONGEST} action lists, 1 to ${LONGEST} long (repeats included)`, growing(''));
  await round('the same lists again with since=', growing('&since=2020-01-01T00:00:00Z'));
  await round('the same lists again with target= and target_kind=', growing('&target=f1&target_kind=field'));
  await round(
    'the same lists again with since=, until=, target= and after=',
    growing('&since=2020-01-01T00:00:00Z&until=2100-01-01T00:00:00Z&target=f2&after=1'),
  );
  await round(
    'the same token under 1,000 spellings of its header (spaces, case), up to 8 KB',
    (function* () {
      for (let k = 1; k <= 1_000; k++)
        yield ['/v1/personas/ada', `${k % 2 === 0 ? 'Bearer' : 'bearer'}${' '.repeat(k * 8)}${token}`] as [
          string,
          string,
        ];
    })(),
  );
} finally {
  await service.stop();
  await identity.close();
  rmSync(dataDir, { recursive: true, force: true });
}
