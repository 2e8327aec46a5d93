/**
 * The package electron-builder really makes, where Electron's binary cannot be downloaded: a stand-in
 * Electron folder whose "binary" carries Electron's fuse sentinel and wire (so electron-builder really
 * flips the fuses), `--linux dir` with native rebuilds off (the checkout's better-sqlite3 is packed as it
 * is), and the figures of what was made. Used by test/packaging.test.ts and bench/desktop/package-size.ts;
 * never by the app.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import { listPackage, statFile } from '@electron/asar';
import { FuseV1Options } from '@electron/fuses';

/** A fuse's state in the wire: the characters '1' and '0' (@electron/fuses' FuseState, which it does not export). */
export const FuseState = { ENABLE: '1'.charCodeAt(0), DISABLE: '0'.charCodeAt(0) } as const;
/** Electron's fuse sentinel, as @electron/fuses looks for it in the binary. */
const SENTINEL = 'dL7pKGdnNz796PbbjQWNKmHXBZaB9tsX';
/** Electron's own defaults, so that every fuse electron-builder.yml sets differently must really be flipped. */
export const ELECTRON_DEFAULT_FUSES: Record<number, number> = {
  [FuseV1Options.RunAsNode]: FuseState.ENABLE,
  [FuseV1Options.EnableCookieEncryption]: FuseState.DISABLE,
  [FuseV1Options.EnableNodeOptionsEnvironmentVariable]: FuseState.ENABLE,
  [FuseV1Options.EnableNodeCliInspectArguments]: FuseState.ENABLE,
  [FuseV1Options.EnableEmbeddedAsarIntegrityValidation]: FuseState.DISABLE,
  [FuseV1Options.OnlyLoadAppFromAsar]: FuseState.DISABLE,
  [FuseV1Options.LoadBrowserProcessSpecificV8Snapshot]: FuseState.DISABLE,
  [FuseV1Options.GrantFileProtocolExtraPrivileges]: FuseState.ENABLE,
};

/** Makes the stand-in Electron folder: a file named like Electron's Linux binary, with the sentinel and Electron's default wire. */
export function standInElectron(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const count = Object.keys(ELECTRON_DEFAULT_FUSES).length;
  const wire = Buffer.from([1, count, ...Array.from({ length: count }, (_, i) => ELECTRON_DEFAULT_FUSES[i]!)]);
  writeFileSync(join(dir, 'electron'), Buffer.concat([Buffer.from("#!/bin/sh\n# stand-in for Electron's binary\nexit 1\n"), Buffer.from(SENTINEL), wire]), { mode: 0o755 });
  writeFileSync(join(dir, 'LICENSE'), 'stand-in\n');
  return dir;
}

export interface PackedApp {
  /** release/linux-unpacked: the stand-in binary (fuses flipped) and resources/. */
  unpacked: string;
  archive: string;
  /** electron-builder's output. */
  log: string;
}

/** `electron-builder --linux dir` in a project folder with its own electron-builder.yml, against a stand-in Electron, native rebuilds off. */
export async function packLinuxDir(options: { projectDir: string; outputDir: string; builder: string }): Promise<PackedApp> {
  const electronDist = standInElectron(join(options.outputDir, '..', 'electron-dist'));
  const args = [options.builder, '--linux', 'dir', '--publish', 'never', `-c.electronDist=${electronDist}`, '-c.npmRebuild=false', `-c.directories.output=${options.outputDir}`];
  const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: options.projectDir, env: { ...process.env, CI: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (d: Buffer) => (text += d.toString()));
    child.stderr.on('data', (d: Buffer) => (text += d.toString()));
    child.once('error', reject);
    child.once('exit', (c) => resolve({ code: c, output: text }));
  });
  if (code !== 0) throw new Error(`electron-builder failed (${code}):\n${output}`);
  const unpacked = join(options.outputDir, 'linux-unpacked');
  return { unpacked, archive: join(unpacked, 'resources', 'app.asar'), log: output };
}

export interface ArchiveFile {
  path: string;
  size: number;
  unpacked: boolean;
}

/** Files (not folders or links) in an archive, with whether each is unpacked beside it. */
export function archiveFiles(archive: string): ArchiveFile[] {
  const files: ArchiveFile[] = [];
  for (const entry of listPackage(archive, { isPack: false })) {
    const stat = statFile(archive, entry.slice(1), false) as { files?: unknown; link?: string; size?: number; unpacked?: boolean };
    if (stat.files !== undefined || stat.link !== undefined) continue;
    files.push({ path: entry.slice(1).split(sep).join('/'), size: stat.size ?? 0, unpacked: stat.unpacked === true });
  }
  return files;
}

export function folderSize(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    total += entry.isDirectory() ? folderSize(path) : statSync(path).size;
  }
  return total;
}

export interface Payload {
  archiveBytes: number;
  unpackedBytes: number;
  files: number;
  unpackedFiles: number;
  /** npm packages in the archive. */
  packages: string[];
  /** Bytes by top-level part (a package, an out/ folder, a file), largest first. */
  largest: Array<[string, number]>;
}

/** What the app carries besides Electron: the archive and what is unpacked beside it. */
export function payload(archive: string): Payload {
  const files = archiveFiles(archive);
  const unpackedDir = `${archive}.unpacked`;
  const byPart = new Map<string, number>();
  for (const f of files) {
    const part = /^(node_modules\/(?:@[^/]+\/)?[^/]+|out\/[^/]+|[^/]+)/.exec(f.path)![1]!;
    byPart.set(part, (byPart.get(part) ?? 0) + f.size);
  }
  return {
    archiveBytes: statSync(archive).size,
    unpackedBytes: statSync(unpackedDir, { throwIfNoEntry: false }) ? folderSize(unpackedDir) : 0,
    files: files.length,
    unpackedFiles: files.filter((f) => f.unpacked).length,
    packages: [...new Set(files.filter((f) => f.path.startsWith('node_modules/')).map((f) => /^node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(f.path)![1]!))].sort(),
    largest: [...byPart].sort((a, b) => b[1] - a[1]),
  };
}

export function describePayload(p: Payload): string {
  const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;
  return (
    `payload ${mb(p.archiveBytes + p.unpackedBytes)} (app.asar ${mb(p.archiveBytes)} + app.asar.unpacked ${mb(p.unpackedBytes)}), ` +
    `${p.files} files (${p.unpackedFiles} unpacked), ${p.packages.length} packages; largest: ` +
    p.largest
      .slice(0, 6)
      .map(([part, n]) => `${part} ${mb(n)}`)
      .join(', ')
  );
}
