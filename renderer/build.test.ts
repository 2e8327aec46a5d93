import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CONTENT_SECURITY_POLICY, buildRenderer } from './build.ts';

const SRC = join(dirname(fileURLToPath(import.meta.url)), 'src');

describe('the renderer build', () => {
  it('is one page, one classic script and one stylesheet, all referenced relatively (file:// and http alike)', async () => {
    const { files } = await buildRenderer();
    expect(Object.keys(files).sort()).toEqual(['app.css', 'app.js', 'index.html']);
    const html = files['index.html']!.body.toString();
    expect(html).toContain('<script defer src="app.js"></script>');
    expect(html).toContain('<link rel="stylesheet" href="app.css" />');
    expect(html).not.toContain('type="module"');
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(files['app.js']!.body.toString()).not.toMatch(/\bimport\s*\(|require\(/);
  });

  it('carries a strict CSP: nothing inline, no eval, nothing from another origin', async () => {
    const { files } = await buildRenderer();
    const html = files['index.html']!.body.toString();
    expect(html).toContain(`<meta http-equiv="Content-Security-Policy" content="${CONTENT_SECURITY_POLICY}" />`);
    const directives = Object.fromEntries(
      CONTENT_SECURITY_POLICY.split(';')
        .map((d) => d.trim().split(/\s+/))
        .map(([name, ...values]) => [name, values]),
    );
    expect(directives['default-src']).toEqual(["'none'"]);
    for (const name of ['script-src', 'style-src', 'connect-src']) expect(directives[name]).toEqual(["'self'"]);
    expect(CONTENT_SECURITY_POLICY).not.toContain('unsafe');
    expect(html).not.toMatch(/<script>|<style>|\son[a-z]+=/i);
  });

  it('writes the same files to a folder for the Electron shell', async () => {
    const out = mkdtempSync(join(tmpdir(), 'renderer-'));
    try {
      const { files } = await buildRenderer({ outDir: out });
      expect(readdirSync(out).sort()).toEqual(Object.keys(files).sort());
      for (const [name, file] of Object.entries(files))
        expect(readFileSync(join(out, name)).equals(file.body)).toBe(true);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('no renderer source builds HTML from strings or evaluates code', () => {
    const sources = readdirSync(SRC).filter((f) => f.endsWith('.ts'));
    expect(sources.length).toBeGreaterThan(5);
    for (const file of sources) {
      const text = readFileSync(join(SRC, file), 'utf8');
      for (const sink of [
        'innerHTML',
        'outerHTML',
        'insertAdjacentHTML',
        'dangerouslySetInnerHTML',
        'document.write',
        'eval(',
        'new Function',
      ]) {
        expect(text.includes(sink), `${file} uses ${sink}`).toBe(false);
      }
    }
  });
});
