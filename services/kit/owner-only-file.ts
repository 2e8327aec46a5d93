import { randomBytes } from 'node:crypto';
import { chmodSync, renameSync, writeFileSync } from 'node:fs';

/** Writes a file readable by its owner only, atomically (a crash leaves the old file or the new one, never half of one). */
export function writeOwnerOnly(file: string, data: string | Buffer): void {
  const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, data, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}
