import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROJECT_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SERVICE_RUNNER = join(PROJECT_ROOT, 'services', 'run.ts');
