/**
 * Repository-hosting gateway, against the GitHub double:
 * 1. the time the gateway adds per call over the same octokit call made directly (p50, p95);
 * 2. the platform requests and primary quota spent by 1,000 idle subscriptions over ten sweeps.
 * Targets: added p50 <= 2 ms; idle sweeps cost 0 primary quota.
 */
import { Octokit } from 'octokit';
import { startWorld } from '../../test/github-double/world.ts';
import { ms, summarize, time } from '../stats.ts';

const PAT = `github_pat_${'be'.repeat(20)}`;
const world = await startWorld({ REPOHOST_LOG_LEVEL: 'silent', REPOHOST_SWEEP_SECONDS: '3600' });
try {
  const d = world.double;
  d.addToken(PAT, 'bench', 'all');
  d.addRepo('bench/app', { description: 'bench' });
  await world.connect('work', { kind: 'token', token: PAT });
  const token = await world.token();
  const headers = { authorization: `Bearer ${token}`, 'x-identity-profile': 'work' };

  // 1. Added time per call.
  const direct = new Octokit({ auth: PAT, baseUrl: d.url, throttle: { enabled: false }, retry: { enabled: false } });
  const etag = String((await direct.rest.repos.get({ owner: 'bench', repo: 'app' })).headers.etag);
  const viaGateway = async () => {
    const res = await fetch(`${world.gateway.url}/v1/repos/bench/app`, { headers });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`gateway answered ${res.status}`);
  };
  const directFull = () => direct.rest.repos.get({ owner: 'bench', repo: 'app' });
  // The gateway revalidates with its ETag, so the like-for-like direct call is the same conditional request (answered 304).
  const directConditional = () =>
    direct.rest.repos
      .get({ owner: 'bench', repo: 'app', headers: { 'if-none-match': etag } })
      .catch((err: { status?: number }) => {
        if (err.status !== 304) throw err;
      });
  for (let i = 0; i < 100; i++) {
    await viaGateway();
    await directFull();
    await directConditional();
  }
  const N = 1000;
  const g: number[] = [];
  const f: number[] = [];
  const c: number[] = [];
  const checksBefore = world.gateway.parts.resolver.checks;
  const [loopMs] = await time(async () => {
    for (let i = 0; i < N; i++) {
      g.push((await time(viaGateway))[0]);
      f.push((await time(directFull))[0]);
      c.push((await time(directConditional))[0]);
    }
  });
  const checks = world.gateway.parts.resolver.checks - checksBefore;
  const sg = summarize(g);
  const sf = summarize(f);
  const sc = summarize(c);
  console.log('repohost-gateway / time added per call (GET a repository, warm caches)');
  console.log(`  direct octokit, full 200 answer (${sf.n}):       p50 ${ms(sf.p50)}  p95 ${ms(sf.p95)}`);
  console.log(`  direct octokit, conditional 304 (${sc.n}):       p50 ${ms(sc.p50)}  p95 ${ms(sc.p95)}`);
  console.log(
    `  through the gateway (token check, credential cache, ETag 304, projection) (${sg.n}): p50 ${ms(sg.p50)}  p95 ${ms(sg.p95)}`,
  );
  console.log(
    `  added over the same conditional call:           p50 ${ms(sg.p50 - sc.p50)}  p95 ${ms(sg.p95 - sc.p95)}   (target p50 <= 2 ms)`,
  );
  console.log(
    `  added over a plain full call:                   p50 ${ms(sg.p50 - sf.p50)}  p95 ${ms(sg.p95 - sf.p95)}`,
  );
  // Each held credential is confirmed with the identity service at most every REPOHOST_CREDENTIAL_RECHECK_MS (5 s).
  console.log(`  credential confirmations asked of the identity service: ${checks} over ${ms(loopMs)} of calls`);

  // 2. 1,000 idle subscriptions over ten sweeps.
  const KINDS = ['pull_merged', 'review_landed', 'run_completed', 'checks_settled'] as const;
  const COUNT = 1000;
  const subs: { kind: (typeof KINDS)[number]; pull?: number; ref?: string; run_id?: number }[] = [];
  for (let i = 0; i < COUNT; i++) {
    const kind = KINDS[i % 4]!;
    if (kind === 'run_completed')
      subs.push({
        kind,
        run_id: d.addWorkflowRun('bench/app', { name: `r${i}`, head_branch: 'main', settleMs: 86_400_000 }).runId,
      });
    else if (kind === 'checks_settled') {
      const branch = `b${i}`;
      d.repo('bench/app').refs.set(`heads/${branch}`, d.headOf('bench/app', 'main'));
      const sha = d.pushCommit('bench/app', branch, { [`f${i}`]: 'x' });
      d.addCheckRun('bench/app', sha, { name: 'slow', settleMs: 86_400_000 });
      subs.push({ kind, ref: branch });
    } else {
      const branch = `p${i}`;
      d.repo('bench/app').refs.set(`heads/${branch}`, d.headOf('bench/app', 'main'));
      d.pushCommit('bench/app', branch, { [`f${i}`]: 'x' });
      subs.push({ kind, pull: d.addPull('bench/app', { head: branch }) });
    }
  }
  const [openMs] = await time(async () => {
    for (let i = 0; i < COUNT; i += 50) {
      await Promise.all(
        subs.slice(i, i + 50).map(async (s) => {
          const res = await fetch(`${world.gateway.url}/v1/subscriptions`, {
            method: 'POST',
            headers: { ...headers, 'content-type': 'application/json' },
            body: JSON.stringify({ ...s, repo: 'bench/app', signal_url: `${world.receiver.url}/hook` }),
          });
          if (res.status !== 201) throw new Error(`open answered ${res.status}: ${await res.text()}`);
        }),
      );
    }
  });
  const sweeps = world.gateway.parts.subscriptions;
  await sweeps.sweep(); // the first sweep after opening fills nothing new: openings already cached every answer
  const callsBefore = d.calls.length;
  const quotaBefore = d.quotaUsed('bench');
  const sweepMs: number[] = [];
  const sweepChecksBefore = world.gateway.parts.resolver.checks;
  for (let i = 0; i < 10; i++) sweepMs.push((await time(() => sweeps.sweep()))[0]);
  const sweepChecks = world.gateway.parts.resolver.checks - sweepChecksBefore;
  const calls = d.calls.slice(callsBefore);
  const notModified = calls.filter((x) => x.status === 304).length;
  const ss = summarize(sweepMs);
  console.log(`repohost-gateway / ${COUNT} idle subscriptions (250 of each kind), ten sweeps`);
  console.log(`  opened in ${ms(openMs)}`);
  console.log(`  platform requests over ten sweeps:  ${calls.length} (${notModified} answered 304 Not Modified)`);
  console.log(`  primary quota spent over ten sweeps: ${d.quotaUsed('bench') - quotaBefore}   (target 0)`);
  console.log(`  one sweep of ${COUNT}: p50 ${ms(ss.p50)}  max ${ms(Math.max(...sweepMs))}`);
  console.log(`  credential confirmations over ten sweeps: ${sweepChecks} (one held credential; at most one per pass)`);
  // What one sweep's answers take of REPOHOST_ETAG_CACHE_BYTES (the double's answers are smaller than GitHub's: see the README).
  const kept = world.gateway.held().etagAnswers;
  console.log(
    `  answers kept for revalidation: ${kept.entries}, ${(kept.bytes / 1048576).toFixed(1)} MiB of the ${(kept.maxBytes / 1048576).toFixed(0)} MiB budget`,
  );
  console.log(`  signals sent: ${world.receiver.received.length}; double contract violations: ${d.violations.length}`);
} finally {
  await world.close();
}
