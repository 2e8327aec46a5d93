import type { z } from 'zod';
import type { Checks } from './shapes.ts';
import type { PlatformClient } from './platform/index.ts';
import { check, checksState, commitStatus } from './projection.ts';

/**
 * What the platform says about a commit's checks: its check runs and its commit statuses (newest per
 * context), two conditional reads. Settled means at least one of them and none still running.
 */
export async function readChecks(
  octokit: PlatformClient,
  owner: string,
  repo: string,
  ref: string,
  limit: number,
): Promise<Omit<z.infer<typeof Checks>, 'ref'>> {
  const [runs, combined] = await Promise.all([
    octokit.rest.checks.listForRef({ owner, repo, ref, per_page: limit }),
    octokit.rest.repos.getCombinedStatusForRef({ owner, repo, ref, per_page: 100 }),
  ]);
  const all = [...runs.data.check_runs.map(check), ...combined.data.statuses.map(commitStatus)];
  const total = runs.data.total_count + combined.data.total_count;
  const items = all.slice(0, limit);
  const seen = checksState(all);
  // With more checks than were read, the unread ones may still run: at best pending.
  const state = total > all.length && seen !== 'failure' ? 'pending' : seen;
  return { sha: combined.data.sha || runs.data.check_runs[0]?.head_sha || ref, state, total, items };
}
