/**
 * The gateway's memory under large distinct reads (issue 10: the ETag cache bounded by bytes, not
 * entries). A real gateway process against the GitHub double and the embedded identity service: one
 * profile reads 2,000 distinct files of 100 KB (each contents answer about 137 KB), then the same
 * 2,000 again, then 50 more profiles (their own tokens) read 40 files each, and the first profile
 * reads again what it read just before them. Prints the gateway's resident memory (VmRSS) after each
 * round, and how many platform reads of each round the gateway revalidated (304, no quota). The gateway runs with its defaults (REPOHOST_ETAG_CACHE_BYTES 32 MiB);
 * run this file in a checkout of an earlier commit for the figure before (an ETag cache of 5,000
 * entries per credential).
 *
 *   npx tsx bench/repohost-gateway/memory-under-large-reads.ts     (or: npm run bench -- repohost-gateway)
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { startGitHubDouble } from '../../test/github-double/double.ts';
import { startTestIdentity, tempDir } from '../../test/support/identity.ts';
import { freePort, spawnService } from '../../test/support/process.ts';
import { rss } from '../stats.ts';

const FILES = 2_000;
const FILE_BYTES = 100_000;
const PROFILES = 50;
const READS_PER_PROFILE = 40;
const AT_ONCE = 8;

const double = await startGitHubDouble();
const serviceToken = randomBytes(24).toString('hex');
const identity = await startTestIdentity({
  IDENTITY_SERVICE_TOKENS: `repohost-api=${serviceToken}`,
  IDENTITY_PLATFORM_URL: double.url,
});
const dataDir = tempDir('repohost-memory-bench');
const port = await freePort();
const gateway = await spawnService(
  'repohost-gateway',
  {
    REPOHOST_PORT: String(port),
    REPOHOST_DATA_DIR: dataDir,
    ...identity.trust('REPOHOST_'),
    REPOHOST_PLATFORM_URL: double.url,
    REPOHOST_IDENTITY_SERVICE_TOKEN: serviceToken,
    REPOHOST_LOG_LEVEL: 'warn',
  },
  port,
);
try {
  const pid = gateway.child.pid!;
  const files: Record<string, string> = {};
  for (let i = 0; i < FILES; i++) files[`f${i}.txt`] = `file ${i}\n`.padEnd(FILE_BYTES, `${i} `);
  // Each profile's token is another platform user, with its own quota (the repository is public).
  const connect = async (profile: string, token: string, login: string) => {
    double.addToken(token, login, 'all');
    const res = await fetch(`${identity.url}/v1/connections/${profile}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${identity.localCredential}`, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'token', token }),
    });
    if (res.status !== 200) throw new Error(`connect answered ${res.status}: ${await res.text()}`);
  };
  double.addRepo('bench/big', { files });
  const quotaSpent = () =>
    double.quotaUsed('bench') +
    Array.from({ length: PROFILES }, (_, p) => double.quotaUsed(`reader${p}`)).reduce((a, b) => a + b, 0);
  await connect('work', `github_pat_${'ab'.repeat(20)}`, 'bench');
  const token = await identity.mint(identity.localCredential, 'repohost-api');
  const read = async (profile: string, path: string) => {
    const res = await fetch(`${gateway.url}${path}`, {
      headers: { authorization: `Bearer ${token}`, 'x-identity-profile': profile },
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
  };
  const round = async (name: string, reads: [string, string][]) => {
    const callsBefore = double.calls.length;
    const quotaBefore = quotaSpent();
    for (let i = 0; i < reads.length; i += AT_ONCE)
      await Promise.all(reads.slice(i, i + AT_ONCE).map(([profile, path]) => read(profile, path)));
    const calls = double.calls.slice(callsBefore);
    const notModified = calls.filter((c) => c.status === 304).length;
    console.log(
      `${name.padEnd(66)} ${rss(pid).padStart(8)}   ${String(notModified).padStart(5)} of ${calls.length} revalidated (304), quota spent ${quotaSpent() - quotaBefore}`,
    );
  };
  const contents = (i: number) => `/v1/repos/bench/big/contents?path=f${i}.txt&max_bytes=1000000`;

  console.log(
    `repohost-gateway (pid ${pid}), resident memory (VmRSS) after each round; files of ${FILE_BYTES} bytes (contents answers about 137 KB)`,
  );
  console.log(`${'round'.padEnd(66)} ${'RSS'.padStart(8)}   platform reads`);
  await round(
    'after start, 100 reads of one repository',
    Array.from({ length: 100 }, () => ['work', '/v1/repos/bench/big'] as [string, string]),
  );
  await round(
    `${FILES} distinct file reads, one profile`,
    Array.from({ length: FILES }, (_, i) => ['work', contents(i)] as [string, string]),
  );
  await round(
    `the same ${FILES} again`,
    Array.from({ length: FILES }, (_, i) => ['work', contents(i)] as [string, string]),
  );
  for (let p = 0; p < PROFILES; p++)
    await connect(`p${p}`, `github_pat_${p.toString().padStart(4, '0')}${'cd'.repeat(18)}`, `reader${p}`);
  // Read just before the other profiles' reads: the most recent of the first profile's answers.
  await round('the first profile reads its repository', [['work', '/v1/repos/bench/big']]);
  await round(
    `${PROFILES} more profiles, ${READS_PER_PROFILE} distinct file reads each`,
    Array.from(
      { length: PROFILES * READS_PER_PROFILE },
      (_, k) => [`p${k % PROFILES}`, contents(Math.floor(k / PROFILES))] as [string, string],
    ),
  );
  await round('the first profile reads its repository again (revalidated: not pushed out)', [
    ['work', '/v1/repos/bench/big'],
  ]);
  if (double.violations.length > 0) throw new Error(`the double saw ${double.violations.length} contract violations`);
} finally {
  await gateway.stop();
  await identity.close();
  await double.close();
  rmSync(dataDir, { recursive: true, force: true });
}
