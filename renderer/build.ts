/**
 * The console's one build, for Electron and the browser: esbuild bundles renderer/src into a classic
 * script (so it also runs from file:// in Electron), beside index.html and the stylesheet. The headless
 * console serves the files from memory; the Electron shell may write them to a folder with `outDir`.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const HERE = dirname(fileURLToPath(import.meta.url));

/** No inline script or style, no eval, nothing from another origin; the page talks only to its own origin. */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'";

export interface RendererFile {
  contentType: string;
  body: Buffer;
}

export interface RendererBuild {
  /** By relative path: index.html, app.js, app.css. */
  files: Record<string, RendererFile>;
}

export async function buildRenderer(options: { outDir?: string; minify?: boolean } = {}): Promise<RendererBuild> {
  const bundle = await build({
    entryPoints: [join(HERE, 'src', 'main.ts')],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    target: ['chrome120'],
    minify: options.minify ?? true,
    legalComments: 'none',
    logLevel: 'silent',
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  const script = bundle.outputFiles[0];
  if (!script) throw new Error('The renderer build produced no script; check renderer/src/main.ts.');
  const html = (await readFile(join(HERE, 'index.html'), 'utf8')).replace('%CSP%', CONTENT_SECURITY_POLICY);
  const files: Record<string, RendererFile> = {
    'index.html': { contentType: 'text/html; charset=utf-8', body: Buffer.from(html) },
    'app.js': { contentType: 'text/javascript; charset=utf-8', body: Buffer.from(script.contents) },
    'app.css': { contentType: 'text/css; charset=utf-8', body: await readFile(join(HERE, 'styles.css')) },
  };
  if (options.outDir) {
    await mkdir(options.outDir, { recursive: true });
    for (const [name, file] of Object.entries(files)) await writeFile(join(options.outDir, name), file.body);
  }
  return { files };
}
