/**
 * Names the platform can hold, checked before any of them goes into a platform URL: an owner, a
 * repository name, a branch or other ref, a file path, a workflow. Each rule answers what is wrong in
 * words the caller can act on, or undefined when the name is fine. `.` and `..` are refused
 * everywhere: URL normalisation would turn them into another path (`/repos/alice/..` is `/repos/`).
 */

/**
 * An account (user or organisation) name: 1-39 letters, digits, "-" and "_". New GitHub accounts may
 * not start or end with a hyphen or repeat one, but older accounts do (`foo-`, `-ACE-`, `0----0`) and
 * managed users carry an underscore (`mona_acme`); all of them own repositories, so only what no
 * account has is refused, which keeps every other character (".", "/", "%") out of the platform URL.
 */
export function ownerProblem(owner: string): string | undefined {
  if (/^[A-Za-z0-9_-]{1,39}$/.test(owner)) return undefined;
  return 'an owner is 1-39 letters, digits, "-" or "_"';
}

/** GitHub's repository rule: 1-100 of letters, digits, ".", "-" and "_"; not "." or ".."; no ".git" or ".wiki" ending. */
export function repoNameProblem(name: string): string | undefined {
  if (!/^[A-Za-z0-9._-]{1,100}$/.test(name)) return 'a repository name is 1-100 letters, digits, ".", "-" or "_"';
  if (name === '.' || name === '..') return 'a repository name cannot be "." or ".."';
  // GitHub drops a ".git" ending when it creates a repository, and keeps ".wiki" for the wiki: no repository has either.
  if (/\.(git|wiki)$/i.test(name)) return 'a repository name cannot end with ".git" or ".wiki"';
  return undefined;
}

/** `owner/name` as one string (subscriptions). */
export function repoProblem(repo: string): string | undefined {
  const parts = repo.split('/');
  if (parts.length !== 2) return 'repo is owner/name';
  return ownerProblem(parts[0]!) ?? repoNameProblem(parts[1]!);
}

/** A branch, tag or commit SHA, by `git check-ref-format --branch`'s rules (a SHA passes them). */
export function refProblem(ref: string): string | undefined {
  if (ref.length === 0 || ref.length > 250) return 'a ref is 1-250 characters';
  // Space, control characters and ~ ^ : ? * [ \ are never part of a ref.
  if (/[\s~^:?*[\\]/.test(ref) || [...ref].some((c) => c < ' ' || c === '\u007f')) {
    return 'a ref has no spaces, control characters or any of ~ ^ : ? * [ \\';
  }
  if (ref.startsWith('-')) return 'a ref cannot start with "-"';
  if (ref.startsWith('/') || ref.endsWith('/') || ref.includes('//'))
    return 'a ref cannot start or end with "/" or contain "//"';
  if (ref.includes('..')) return 'a ref cannot contain ".."';
  if (ref.includes('@{') || ref === '@') return 'a ref cannot be "@" or contain "@{"';
  if (ref.endsWith('.')) return 'a ref cannot end with "."';
  if (ref.split('/').some((part) => part.startsWith('.') || part.endsWith('.lock'))) {
    return 'no part of a ref (between slashes) may start with "." or end with ".lock"';
  }
  return undefined;
}

/** A new branch's name: a ref, and not HEAD (git refuses to make a branch of that name). */
export function branchProblem(name: string): string | undefined {
  return refProblem(name) ?? (name === 'HEAD' ? 'a branch cannot be named HEAD' : undefined);
}

/** A path inside a repository: relative, segments neither empty nor "." or "..", no NUL. */
export function filePathProblem(path: string): string | undefined {
  if (path.length === 0 || path.length > 1024) return 'a path is 1-1024 characters';
  if (path.includes('\u0000')) return 'a path cannot contain a NUL character';
  if (path.startsWith('/') || path.endsWith('/')) return 'a path is relative, without a leading or trailing slash';
  if (path.split('/').some((part) => part === '' || part === '.' || part === '..'))
    return 'a path has no empty, "." or ".." parts';
  return undefined;
}

/** A workflow: its numeric id, or its file name (ci.yml) under .github/workflows. */
export function workflowProblem(workflow: string): string | undefined {
  if (/^\d{1,15}$/.test(workflow) || /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}\.ya?ml$/.test(workflow)) return undefined;
  return 'workflow is a workflow id or its file name ending in .yml or .yaml (ci.yml)';
}
