import type { z } from 'zod';
import { problem } from '../kit/problem.ts';
import type { CommitResult } from './shapes.ts';
import type { PlatformClient, Session } from './platform/index.ts';

/**
 * Several files in one commit through the Git Data API, never forced: read the branch head, build a
 * tree on the head's tree, make a commit whose parent is that head, and move the branch only as a
 * fast-forward. When the branch moved (before or during), the answer is 409 naming the current head.
 */

export interface FileChange {
  path: string;
  action: 'upsert' | 'delete';
  content?: string;
  encoding: 'utf-8' | 'base64';
  mode: '100644' | '100755' | '120000';
}

export interface CommitRequest {
  branch: string;
  message: string;
  expected_head_sha?: string;
  changes: FileChange[];
}

async function headOf(octokit: PlatformClient, owner: string, repo: string, branch: string): Promise<string> {
  const ref = await octokit.rest.git.getRef({ owner, repo, ref: `heads/${branch}` });
  return ref.data.object.sha;
}

function moved(branch: string, head: string): never {
  throw problem.conflict(
    `Branch ${branch} is now at ${head}, not at the expected head; nothing was written. Read the branch again, rebase your change on ${head} and send it with expected_head_sha ${head}.`,
    { current_head_sha: head },
  );
}

export async function commitFiles(
  session: Session,
  owner: string,
  repo: string,
  req: CommitRequest,
): Promise<z.infer<typeof CommitResult>> {
  const full = `${owner}/${repo}`;
  const head = await session.run({ repo: full, thing: `Branch ${req.branch}` }, (o) =>
    headOf(o, owner, repo, req.branch),
  );
  if (req.expected_head_sha && req.expected_head_sha !== head) moved(req.branch, head);

  return session.run({ repo: full, write: true }, async (octokit) => {
    const baseCommit = await octokit.rest.git.getCommit({ owner, repo, commit_sha: head });
    const tree: { path: string; mode: FileChange['mode']; type: 'blob'; sha?: string | null; content?: string }[] = [];
    for (const c of req.changes) {
      if (c.action === 'delete') {
        tree.push({ path: c.path, mode: '100644', type: 'blob', sha: null });
      } else if (c.encoding === 'base64') {
        const blob = await octokit.rest.git.createBlob({ owner, repo, content: c.content ?? '', encoding: 'base64' });
        tree.push({ path: c.path, mode: c.mode, type: 'blob', sha: blob.data.sha });
      } else {
        tree.push({ path: c.path, mode: c.mode, type: 'blob', content: c.content ?? '' });
      }
    }
    const newTree = await octokit.rest.git.createTree({ owner, repo, base_tree: baseCommit.data.tree.sha, tree });
    const commit = await octokit.rest.git.createCommit({
      owner,
      repo,
      message: req.message,
      tree: newTree.data.sha,
      parents: [head],
    });
    try {
      await octokit.rest.git.updateRef({ owner, repo, ref: `heads/${req.branch}`, sha: commit.data.sha, force: false });
    } catch (err) {
      const status = (err as { status?: number }).status;
      if (status === 422 || status === 409) {
        // Only a head that moved is a conflict to rebase on; a protected branch (or a ruleset) refuses with the same statuses.
        const now = await headOf(octokit, owner, repo, req.branch);
        if (now !== head) moved(req.branch, now);
      }
      throw err;
    }
    return { sha: commit.data.sha, branch: req.branch, previous_head: head, files: req.changes.length };
  });
}
