/**
 * The macOS app electron-builder makes with no signing identity (as the desktop workflow builds it) is
 * re-signed ad hoc after its fuses are flipped: flipping rewrites bytes of the Electron Framework, and
 * macOS on Apple silicon kills an app whose bytes no longer match its signature. Checked here with the
 * real electron-builder packing `--mac dir --arm64` against a stand-in Electron.app (its framework
 * carries the fuse sentinel and wire) and a stand-in `codesign` first on PATH that records how it was
 * called and what the framework held at that moment. What macOS itself then does with the signature
 * is confirmed only where the workflow runs on macOS. The app carries better-sqlite3's prebuilt binary
 * for macOS on arm64, the one of the system and architecture it is for.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { FuseV1Options, getCurrentFuseWire } from '@electron/fuses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ELECTRON_DEFAULT_FUSES, FuseState, archiveFiles, standInElectronApp } from '../main/build/pack-check.ts';
import { ROOT } from './support/process.ts';

const work = mkdtempSync(join(tmpdir(), 'packaging-mac-'));
const app = join(work, 'release', 'mac-arm64', 'Hub services.app');
const framework = (appPath: string) =>
  join(appPath, 'Contents', 'Frameworks', 'Electron Framework.framework', 'Electron Framework');
/** The stand-in codesign is a POSIX shell script. */
const skipped =
  process.platform === 'win32' ? 'the stand-in codesign is a shell script, which Windows cannot run' : undefined;
if (skipped) process.stdout.write(`[packaging-mac.test] skipped: ${skipped}.\n`);

let log = '';

beforeAll(async () => {
  if (skipped) return;
  const bin = join(work, 'bin');
  mkdirSync(bin, { recursive: true });
  // Records its arguments, one a line, and a copy of the framework as it is when codesign is called.
  writeFileSync(
    join(bin, 'codesign'),
    `#!/bin/sh\nfor a; do printf '%s\\n' "$a" >> "${join(work, 'codesign-args')}"; last="$a"; done\n` +
      `cp "$last/Contents/Frameworks/Electron Framework.framework/Electron Framework" "${join(work, 'framework-when-signed')}"\nexit 0\n`,
    { mode: 0o755 },
  );
  // A .icns of the app's icon: electron-builder would otherwise download its converter to make one from the PNG.
  const png = readFileSync(join(ROOT, 'assets', 'icon.png'));
  const icns = Buffer.concat([
    Buffer.from('icns'),
    u32(png.length + 16),
    Buffer.from('ic10'),
    u32(png.length + 8),
    png,
  ]);
  writeFileSync(join(work, 'icon.icns'), icns);
  const args = [
    join(ROOT, 'node_modules', 'electron-builder', 'cli.js'),
    '--mac',
    'dir',
    '--arm64',
    '--publish',
    'never',
    `-c.electronDist=${standInElectronApp(join(work, 'electron-dist'))}`,
    `-c.mac.icon=${join(work, 'icon.icns')}`,
    `-c.directories.output=${join(work, 'release')}`,
  ];
  const env = {
    ...process.env,
    CI: '1',
    CSC_IDENTITY_AUTO_DISCOVERY: 'false',
    PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`,
  };
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d: Buffer) => (log += d.toString()));
    child.stderr.on('data', (d: Buffer) => (log += d.toString()));
    child.once('error', reject);
    child.once('close', resolve);
  });
  if (code !== 0) throw new Error(`electron-builder failed (${code}):\n${log.slice(-4000)}`);
}, 300_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

describe('the macOS app without a signing identity (electron-builder --mac dir --arm64, stand-in Electron.app)', () => {
  it.skipIf(skipped !== undefined)(
    'is re-signed ad hoc, as a whole, after the fuses are flipped, and signed by nothing after that',
    async () => {
      const recorded = join(work, 'codesign-args');
      const calls = existsSync(recorded) ? readFileSync(recorded, 'utf8').trimEnd().split('\n') : [];
      expect(calls).toEqual([
        '--sign',
        '-',
        '--force',
        '--preserve-metadata=entitlements,requirements,flags,runtime',
        '--deep',
        app,
      ]);
      // When codesign ran, the framework already carried the flipped fuses: the signature covers the final bytes.
      const signed = (await getCurrentFuseWire(join(work, 'framework-when-signed'))) as unknown as Record<
        number,
        number
      >;
      expect(signed[FuseV1Options.RunAsNode]).toBe(FuseState.DISABLE);
      expect(signed[FuseV1Options.EnableNodeCliInspectArguments]).toBe(FuseState.DISABLE);
      expect(signed[FuseV1Options.EnableCookieEncryption]).toBe(FuseState.ENABLE);
      expect(ELECTRON_DEFAULT_FUSES[FuseV1Options.RunAsNode]).toBe(FuseState.ENABLE);
      // Nothing changed the framework after it was signed, and nothing else called codesign (the one call above).
      expect(readFileSync(framework(app)).equals(readFileSync(join(work, 'framework-when-signed')))).toBe(true);
    },
  );

  it.skipIf(skipped !== undefined)(
    'carries better-sqlite3\u2019s prebuilt binary for macOS on arm64 only, unpacked',
    () => {
      const archive = join(app, 'Contents', 'Resources', 'app.asar');
      expect(
        archiveFiles(archive)
          .filter((f) => f.path.endsWith('.node'))
          .map((f) => [f.path, f.unpacked]),
      ).toEqual([['node_modules/better-sqlite3/prebuilds/darwin-arm64.node', true]]);
    },
  );
});
