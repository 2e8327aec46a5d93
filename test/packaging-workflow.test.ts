/**
 * The installers are built by .github/workflows/desktop.yml on Linux, macOS and Windows, which cannot
 * run here (no Electron download). This holds the workflow to its steps (install, build, installers,
 * the Electron test against the packaged app, under Xvfb on Linux, artifacts kept) and
 * docs/desktop-and-installers.md's "Building the installers" to the same commands.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './support/process.ts';

interface Step {
  name?: string;
  uses?: string;
  run?: string;
  if?: string;
  shell?: string;
  with?: Record<string, unknown>;
  env?: Record<string, string>;
}
interface Workflow {
  on: Record<string, unknown>;
  jobs: Record<
    string,
    { 'runs-on': string; strategy: { matrix: { include: Array<Record<string, string>> } }; steps: Step[] }
  >;
}

async function loadYaml(text: string): Promise<unknown> {
  const yaml = (await import(join(ROOT, 'node_modules', 'js-yaml', 'index.js'))) as { load(text: string): unknown };
  return yaml.load(text);
}

const workflow = (await loadYaml(readFileSync(join(ROOT, '.github', 'workflows', 'desktop.yml'), 'utf8'))) as Workflow;
const job = Object.values(workflow.jobs)[0]!;
const steps = job.steps;
const runs = steps.map((s) => s.run ?? '').join('\n');
const index = (match: (s: Step) => boolean, what: string) => {
  const i = steps.findIndex(match);
  expect(i, what).toBeGreaterThanOrEqual(0);
  return i;
};

describe('.github/workflows/desktop.yml', () => {
  it('runs on pushes to main, pull requests and by hand, one job per system: Linux, macOS, Windows', () => {
    expect(Object.keys(workflow.on).sort()).toEqual(['pull_request', 'push', 'workflow_dispatch']);
    expect(Object.keys(workflow.jobs)).toHaveLength(1);
    expect(job['runs-on']).toBe('${{ matrix.os }}');
    expect(job.strategy.matrix.include.map((m) => m.os)).toEqual(['ubuntu-latest', 'macos-latest', 'windows-latest']);
  });

  it('installs from the lock file with Node 24, builds, then makes AppImage and deb, dmg, nsis', () => {
    const checkout = index((s) => s.uses?.startsWith('actions/checkout@') === true, 'checkout');
    const node = index((s) => s.uses?.startsWith('actions/setup-node@') === true, 'setup-node');
    expect(steps[node]!.with).toMatchObject({ 'node-version': 24 });
    const install = index((s) => s.run === 'npm ci', 'npm ci');
    const build = index((s) => s.run === 'npm run build', 'npm run build');
    const dist = index((s) => s.run === 'npm run dist -- ${{ matrix.dist }}', 'npm run dist');
    expect([checkout, node, install, build, dist]).toEqual(
      [...[checkout, node, install, build, dist]].sort((a, b) => a - b),
    );
    // bash on every system: PowerShell (Windows' default shell) may drop the `--`, and electron-builder then refuses `nsis`.
    expect(steps[dist]!.shell).toBe('bash');
    expect(Object.fromEntries(job.strategy.matrix.include.map((m) => [m.os, m.dist]))).toEqual({
      'ubuntu-latest': '--linux AppImage deb',
      'macos-latest': '--mac dmg',
      'windows-latest': '--win nsis',
    });
  });

  it('runs test/electron-app.test.ts against the packaged app, under Xvfb on Linux, after the installers are made', () => {
    const dist = index((s) => s.run?.startsWith('npm run dist') === true, 'npm run dist');
    const tests = steps.filter((s) => s.run?.includes('npx vitest run test/electron-app.test.ts'));
    expect(tests.map((s) => s.if).sort()).toEqual(["runner.os != 'Linux'", "runner.os == 'Linux'"]);
    for (const test of tests) {
      expect(steps.indexOf(test)).toBeGreaterThan(dist);
      expect(test.env).toEqual({ HUB_SERVICES_APP: '${{ github.workspace }}/${{ matrix.app }}' });
    }
    expect(tests.find((s) => s.if === "runner.os == 'Linux'")!.run).toBe(
      'xvfb-run -a npx vitest run test/electron-app.test.ts',
    );
    expect(runs).toContain('apt-get install -y xvfb');
    // Each system's packaged app, where electron-builder leaves it beside the installers.
    expect(Object.fromEntries(job.strategy.matrix.include.map((m) => [m.os, m.app]))).toEqual({
      'ubuntu-latest': 'release/linux-unpacked/hub-services',
      'macos-latest': 'release/mac-arm64/Hub services.app/Contents/MacOS/Hub services',
      'windows-latest': 'release/win-unpacked/Hub services.exe',
    });
  });

  it('signs nothing with an identity, so the macOS app is re-signed ad hoc after its fuses are flipped (electron-builder.yml)', async () => {
    expect((job as { env?: Record<string, string> }).env).toMatchObject({ CSC_IDENTITY_AUTO_DISCOVERY: 'false' });
    const config = (await loadYaml(readFileSync(join(ROOT, 'electron-builder.yml'), 'utf8'))) as {
      electronFuses: Record<string, boolean>;
    };
    expect(config.electronFuses.resetAdHocDarwinSignature).toBe(true);
  });

  it('keeps the installers as artifacts, failing when there are none', () => {
    const upload = steps.find(
      (s) => s.uses?.startsWith('actions/upload-artifact@') && s.with?.path === '${{ matrix.installers }}',
    )!;
    expect(upload).toBeDefined();
    expect(upload.with!['if-no-files-found']).toBe('error');
    const installers = job.strategy.matrix.include.map((m) => m.installers!.trim().split('\n'));
    expect(installers).toEqual([['release/*.AppImage', 'release/*.deb'], ['release/*.dmg'], ['release/*.exe']]);
  });
});

describe('docs/desktop-and-installers.md, "Building the installers"', () => {
  const readme = readFileSync(join(ROOT, 'docs', 'desktop-and-installers.md'), 'utf8');
  const section = readme.slice(
    readme.indexOf('## Building the installers'),
    readme.indexOf('\n## ', readme.indexOf('## Building the installers') + 3),
  );

  it('gives the workflow\u2019s commands, in its order, and names the workflow', () => {
    expect(section).toContain('.github/workflows/desktop.yml');
    const commands = [
      'npm ci',
      'npm run build',
      'npm run dist -- --linux AppImage deb',
      'xvfb-run -a npx vitest run test/electron-app.test.ts',
    ];
    const at = commands.map((c) => section.indexOf(c));
    expect(
      at.every((i) => i >= 0),
      JSON.stringify(Object.fromEntries(commands.map((c, i) => [c, at[i]]))),
    ).toBe(true);
    expect(at).toEqual([...at].sort((a, b) => a - b));
    for (const target of ['--mac dmg', '--win nsis', 'HUB_SERVICES_APP']) expect(section).toContain(target);
  });

  it('says what each system needs to build, to run the Electron test and to open what was installed', () => {
    for (const need of ['xvfb-run', 'xcode-select --install', '--use-mock-keychain', 'SmartScreen', 'Open Anyway']) {
      expect(section, need).toContain(need);
    }
    // better-sqlite3's binaries are prebuilt: building an installer compiles nothing.
    for (const gone of ['build-essential', 'node-gyp', 'Desktop development with C++']) {
      expect(section, gone).not.toContain(gone);
    }
    // The same sysctl as the workflow's Linux step, for the unpacked app's sandbox on Ubuntu 24.04.
    const sysctl = /sudo sysctl -w \S+/.exec(runs)![0];
    expect(section).toContain(sysctl);
  });

  it('says how to pass the arguments on Windows, where PowerShell can drop the `--`', () => {
    expect(section).toContain("npm run dist '--' --win nsis");
    expect(section).toMatch(/Git Bash/);
  });
});
