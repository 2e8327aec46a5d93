/** The one way this service talks to the platform (see README.md for what each file does). */
export { Platform, type PlatformClient } from './clients.ts';
export type { PlatformCounters } from './conditional-reads.ts';
export { lastPage, listWithTotal } from './pages.ts';
export type { CallContext } from './problems.ts';
export { CredentialGone, Session } from './session.ts';
