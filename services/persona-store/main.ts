import { runUntilSignalled } from '../kit/server.ts';
import { startPersonaStore } from './service.ts';

await runUntilSignalled('persona-store', () => startPersonaStore(process.env));
