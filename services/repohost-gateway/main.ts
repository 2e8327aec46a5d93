import { runUntilSignalled } from '../kit/server.ts';
import { startRepohostGateway } from './service.ts';

await runUntilSignalled('repohost-gateway', () => startRepohostGateway(process.env));
