/** The one way this service talks to the platform (see README.md for what each file does). */
export { CLIENTS_KEPT, Platform, type PlatformClient } from './clients.ts';
export type { PlatformCounters } from './conditional-reads.ts';
export { EtagCache, type EtagCacheHeld } from './etag-cache.ts';
export { lastPage, listWithTotal } from './pages.ts';
export type { CallContext } from './problems.ts';
export { CredentialGone, Session } from './session.ts';
