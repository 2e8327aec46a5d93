import { z } from 'zod';

/**
 * The profile rule, the same at identity (a connection's profile), the persona store (a persona's
 * profile) and the gateway (X-Identity-Profile): a name a person chooses, safe in a URL path segment,
 * a header and a file name as it is.
 */
export const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The rule in words, for refusals: what a profile may be. */
export const PROFILE_RULE = '1-64 letters, digits, dot, dash or underscore, starting with a letter or digit';

/**
 * A profile name as a zod string. `refusal` starts the sentence of a name that breaks the rule (the
 * rule follows it); `missing`, when given, is the whole sentence for a member or header not sent.
 */
export function profileName({ refusal = 'a profile is', missing }: { refusal?: string; missing?: string } = {}) {
  return z
    .string(missing === undefined ? undefined : { error: missing })
    .regex(PROFILE_NAME, `${refusal} ${PROFILE_RULE}`);
}
