import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { propertyOptions, reportSeedOnFailure } from '../../test/support/seed.ts';
import {
  branchProblem,
  filePathProblem,
  ownerProblem,
  refProblem,
  repoNameProblem,
  repoProblem,
  workflowProblem,
} from './names.ts';

reportSeedOnFailure();

describe('names the platform can hold', () => {
  it('owners: letters, digits, "-" and "_", 1-39 of them, older accounts\u2019 hyphens included', () => {
    for (const ok of ['alice', 'a', 'octo-org', 'foo-', '-ACE-', '0----0', 'mona_acme', 'x'.repeat(39)])
      expect(ownerProblem(ok), ok).toBeUndefined();
    for (const bad of ['', '.', '..', 'a.b', 'a/b', 'al ice', 'x'.repeat(40), '%2e', 'ä', 'a\u0000'])
      expect(ownerProblem(bad), bad).toMatch(/owner is 1-39/);
  });

  it('repository names: 1-100 of letters, digits, ".", "-", "_"; never "." or "..", nor ending in .git or .wiki', () => {
    for (const ok of ['web', '.github', '...', 'a.b-c_d', 'x'.repeat(100), 'gitwiki', 'a.gitx'])
      expect(repoNameProblem(ok), ok).toBeUndefined();
    const refused: [string, RegExp][] = [
      ['.', /"\." or "\.\."/],
      ['..', /"\." or "\.\."/],
      ['', /1-100/],
      ['x'.repeat(101), /1-100/],
      ['a/b', /1-100/],
      ['a b', /1-100/],
      ['caf\u00e9', /1-100/],
      ['%2e%2e', /1-100/],
      ['web.git', /\.git/],
      ['web.GIT', /\.git/],
      ['web.wiki', /\.wiki/],
    ];
    for (const [bad, why] of refused) expect(repoNameProblem(bad), bad).toMatch(why);
  });

  it('owner/name as one string is both rules, and exactly one slash', () => {
    expect(repoProblem('alice/web')).toBeUndefined();
    expect(repoProblem('alice/..')).toMatch(/"\." or "\.\."/);
    expect(repoProblem('../web')).toMatch(/owner/);
    expect(repoProblem('alice/web/x')).toMatch(/owner\/name/);
    expect(repoProblem('alice')).toMatch(/owner\/name/);
  });

  it('refs follow git check-ref-format: no "..", no "." parts, no control characters, not "@"', () => {
    for (const ok of ['main', 'feature/x', 'v1.0', 'a'.repeat(40), 'release/2026-11'])
      expect(refProblem(ok), ok).toBeUndefined();
    for (const bad of [
      '',
      '.',
      '..',
      'a..b',
      'a/./b',
      'a/../b',
      '.hidden',
      'a/.b',
      'x.lock',
      'a/',
      '/a',
      'a//b',
      '-x',
      '@',
      'a@{1}',
      'a b',
      'a:b',
      'a\u0000',
      'a\u007f',
      'a.',
    ]) {
      expect(refProblem(bad), JSON.stringify(bad)).toBeDefined();
    }
    expect(branchProblem('HEAD')).toMatch(/HEAD/);
    expect(branchProblem('feature')).toBeUndefined();
  });

  it('file paths are relative, without empty, "." or ".." parts', () => {
    for (const ok of ['README.md', 'src/app.ts', '.github/workflows/ci.yml', 'a/...'])
      expect(filePathProblem(ok), ok).toBeUndefined();
    for (const bad of ['', '/etc/passwd', 'a/', '..', '../x', 'a/../b', 'a/./b', 'a//b', 'a\u0000b', 'x'.repeat(1025)])
      expect(filePathProblem(bad), bad).toBeDefined();
  });

  it('workflows are an id or a .yml / .yaml file name', () => {
    for (const ok of ['ci.yml', 'release.yaml', '12345']) expect(workflowProblem(ok), ok).toBeUndefined();
    for (const bad of ['..', '../ci.yml', 'ci', '.yml', 'a/b.yml']) expect(workflowProblem(bad), bad).toBeDefined();
  });

  it('property: an owner and name that pass go into the platform URL unchanged by URL normalisation', () => {
    const piece = fc.stringMatching(/^[A-Za-z0-9._\-/%\\ ]{0,12}$/);
    const fragment = fc.oneof(
      piece,
      fc.constantFrom('.', '..', '%2e', '%2E%2E', '/', '\\', 'a.git', 'b.wiki', '-x-', '_'),
    );
    fc.assert(
      fc.property(fragment, fragment, (owner, name) => {
        if (ownerProblem(owner) !== undefined || repoNameProblem(name) !== undefined) return;
        const path = `/repos/${owner}/${name}/pulls`;
        expect(new URL(path, 'https://api.github.example').pathname).toBe(path);
      }),
      propertyOptions({ numRuns: 2000 }),
    );
  });
});
