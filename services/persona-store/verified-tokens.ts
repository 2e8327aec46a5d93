/** @deprecated The kit's cache (`../kit/verified-tokens.ts`) is the one; this goes once api.test.ts and bounded-memory.test.ts import it from there. */
export { rememberVerifiedTokens } from '../kit/verified-tokens.ts';
