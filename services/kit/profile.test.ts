import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { propertyOptions, reportSeedOnFailure } from '../../test/support/seed.ts';
import { PROFILE_NAME, PROFILE_RULE, profileName } from './profile.ts';

reportSeedOnFailure();

describe('the profile rule', () => {
  it.each(['work', 'a', 'A.b-c_d', '0', 'x'.repeat(64), 'Ada.Lovelace'])('admits %s', (name) => {
    expect(profileName().parse(name)).toBe(name);
  });

  it.each(['', '.work', '-work', '_work', 'x'.repeat(65), 'a b', 'a/b', '..', 'caf\u00e9', 'a\u0000', '%2e'])(
    'refuses %j, saying what a profile is',
    (name) => {
      const parsed = profileName().safeParse(name);
      expect(parsed.success).toBe(false);
      expect(parsed.error!.issues[0]!.message).toBe(`a profile is ${PROFILE_RULE}`);
    },
  );

  it('names a header in its own words, and says when it is missing', () => {
    const header = z.object({
      'x-identity-profile': profileName({
        refusal: 'X-Identity-Profile must be a profile name:',
        missing: 'missing; send it',
      }),
    });
    expect(header.safeParse({}).error!.issues[0]!.message).toBe('missing; send it');
    expect(header.safeParse({ 'x-identity-profile': '../x' }).error!.issues[0]!.message).toBe(
      `X-Identity-Profile must be a profile name: ${PROFILE_RULE}`,
    );
  });

  it('admits only names that are the same in a path segment, a header and a file name, as they are', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 70 }), (name) => {
        if (!PROFILE_NAME.test(name)) return;
        expect(encodeURIComponent(name)).toBe(name);
        expect(name).not.toMatch(/^\.|[/\\\s]/);
      }),
      propertyOptions({ numRuns: 2_000 }),
    );
  });
});
