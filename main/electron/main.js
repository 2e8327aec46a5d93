// Electron's entry (package.json "main"): registers tsx so the shell and the services run from their
// TypeScript sources, as in headless mode, then loads the shell.
import { register } from 'tsx/esm/api';

register();
await import('./app.ts');
