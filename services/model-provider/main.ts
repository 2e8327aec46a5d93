import { runUntilSignalled } from '../kit/server.ts';
import { startModelProvider } from './service.ts';

await runUntilSignalled('model-provider', () => startModelProvider(process.env));
