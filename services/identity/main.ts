import { runUntilSignalled } from '../kit/server.ts';
import { startIdentity } from './service.ts';

await runUntilSignalled('identity', () => startIdentity(process.env));
