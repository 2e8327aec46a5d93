/**
 * The console's own settings where no desktop settings exist (headless): `<dataDir>/console/settings.json`,
 * owner-only, written whole through a temporary file and a rename, so a crash never leaves half a file.
 * A file that is missing or not valid reads as the defaults.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import type { FirstRunSettings } from './method-spec.ts';
import { DEFAULT_HUB_CREDENTIAL_DAYS, type ConsolePreferences } from './settings.ts';

const Stored = z.object({
  firstRunDone: z.boolean().default(false),
  hubCredentialDays: z.number().int().min(1).max(3650).nullable().default(DEFAULT_HUB_CREDENTIAL_DAYS),
});

export function consoleSettingsFile(
  dataDir: string,
): FirstRunSettings & ConsolePreferences & { readonly path: string } {
  const path = join(dataDir, 'console', 'settings.json');
  const write = (patch: Partial<z.infer<typeof Stored>>) => {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const temporary = `${path}.${process.pid}.tmp`;
    writeFileSync(temporary, `${JSON.stringify({ ...read(), ...patch })}\n`, { mode: 0o600 });
    renameSync(temporary, path);
  };
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
    setFirstRunDone: (done) => write({ firstRunDone: done }),
    hubCredentialDays: () => read().hubCredentialDays,
    setHubCredentialDays: (days) => write({ hubCredentialDays: days }),
  };
}
