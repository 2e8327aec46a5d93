/**
 * The console's own settings where no desktop settings exist (headless): `<dataDir>/console/settings.json`,
 * owner-only, written whole through a temporary file and a rename, so a crash never leaves half a file.
 * A file that is missing or not valid reads as the defaults.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import type { FirstRunSettings } from './method-spec.ts';

const Stored = z.object({ firstRunDone: z.boolean().default(false) });

export function consoleSettingsFile(dataDir: string): FirstRunSettings & { readonly path: string } {
  const path = join(dataDir, 'console', 'settings.json');
  const read = () => {
    try {
      return Stored.parse(JSON.parse(readFileSync(path, 'utf8')));
    } catch {
      return Stored.parse({});
    }
  };
  return {
    path,
    firstRunDone: () => read().firstRunDone,
    setFirstRunDone(done) {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      const temporary = `${path}.${process.pid}.tmp`;
      writeFileSync(temporary, `${JSON.stringify({ ...read(), firstRunDone: done })}\n`, { mode: 0o600 });
      renameSync(temporary, path);
    },
  };
}
