/**
 * The package electron-builder really makes, where Electron's binary cannot be downloaded: a stand-in
 * Electron folder whose "binary" carries Electron's fuse sentinel and wire (so electron-builder really
 * flips the fuses), `--linux dir`, and the figures of what was made. Used by test/packaging.test.ts and
 * bench/desktop/package-size.ts; never by the app.
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

/** The sentinel and Electron's default fuse wire, as they sit in Electron's binary (Linux) or its framework (macOS). */
function fusedBinary(): Buffer {
  const count = Object.keys(ELECTRON_DEFAULT_FUSES).length;
  const wire = Buffer.from([1, count, ...Array.from({ length: count }, (_, i) => ELECTRON_DEFAULT_FUSES[i]!)]);
  return Buffer.concat([
    Buffer.from("#!/bin/sh\n# stand-in for Electron's binary\nexit 1\n"),
    Buffer.from(SENTINEL),
    wire,
  ]);
}

/** Makes the stand-in Electron folder: a file named like Electron's Linux binary, with the sentinel and Electron's default wire. */
export function standInElectron(dir: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'electron'), fusedBinary(), { mode: 0o755 });
  writeFileSync(join(dir, 'LICENSE'), 'stand-in\n');
  return dir;
}

/**
 * Makes the stand-in for Electron's macOS folder: Electron.app with the Info.plist files electron-builder
 * rewrites, the helper apps it renames, and the Electron Framework carrying the sentinel and wire.
 */
export function standInElectronApp(dir: string): string {
  const plist = (name: string, id: string) =>
    '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n' +
    `<plist version="1.0"><dict><key>CFBundleExecutable</key><string>${name}</string><key>CFBundleIdentifier</key><string>${id}</string>` +
    `<key>CFBundleName</key><string>${name}</string><key>CFBundlePackageType</key><string>APPL</string></dict></plist>\n`;
  const contents = join(dir, 'Electron.app', 'Contents');
  mkdirSync(join(contents, 'MacOS'), { recursive: true });
  mkdirSync(join(contents, 'Resources'), { recursive: true });
  writeFileSync(join(contents, 'Info.plist'), plist('Electron', 'com.github.Electron'));
  writeFileSync(join(contents, 'MacOS', 'Electron'), "#!/bin/sh\n# stand-in for Electron's binary\nexit 1\n", {
    mode: 0o755,
  });
  const framework = join(contents, 'Frameworks', 'Electron Framework.framework');
  mkdirSync(framework, { recursive: true });
  writeFileSync(join(framework, 'Electron Framework'), fusedBinary());
  for (const suffix of ['', ' (GPU)', ' (Renderer)', ' (Plugin)']) {
    const helper = join(contents, 'Frameworks', `Electron Helper${suffix}.app`, 'Contents');
    mkdirSync(join(helper, 'MacOS'), { recursive: true });
    writeFileSync(join(helper, 'Info.plist'), plist(`Electron Helper${suffix}`, 'com.github.Electron.helper'));
    writeFileSync(join(helper, 'MacOS', `Electron Helper${suffix}`), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
  }
  return dir;
}

export interface PackedApp {
  /** release/linux-unpacked: the stand-in binary (fuses flipped) and resources/. */
  unpacked: string;
  archive: string;
  /** electron-builder's output. */
  log: string;
}

/** `electron-builder --linux dir` in a project folder with its own electron-builder.yml, against a stand-in Electron. */
export async function packLinuxDir(options: {
  projectDir: string;
  outputDir: string;
  builder: string;
}): Promise<PackedApp> {
  const electronDist = standInElectron(join(options.outputDir, '..', 'electron-dist'));
  const args = [
    options.builder,
    '--linux',
    'dir',
    '--publish',
    'never',
    `-c.electronDist=${electronDist}`,
    `-c.directories.output=${options.outputDir}`,
  ];
  const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: options.projectDir,
      env: { ...process.env, CI: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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
    const stat = statFile(archive, entry.slice(1), false) as {
      files?: unknown;
      link?: string;
      size?: number;
      unpacked?: boolean;
    };
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
    packages: [
      ...new Set(
        files
          .filter((f) => f.path.startsWith('node_modules/'))
          .map((f) => /^node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(f.path)![1]!),
      ),
    ].sort(),
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
