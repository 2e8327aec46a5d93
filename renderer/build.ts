/**
 * The console's one build, for Electron and the browser: esbuild bundles renderer/src into a classic
 * script (so it also runs from file:// in Electron), beside index.html and the stylesheet. `npm run build`
 * (main/build/) writes it to out/renderer; both transports serve that folder and never build.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { CONTENT_SECURITY_POLICY } from '../main/supervisor/build-outputs.ts';

export { CONTENT_SECURITY_POLICY };

const HERE = dirname(fileURLToPath(import.meta.url));

export interface RendererFile {
  contentType: string;
  body: Buffer;
}

export interface RendererBuild {
  /** By relative path: index.html, app.js, app.css. */
  files: Record<string, RendererFile>;
  /** Every file the build read, absolute: the bundle's sources, index.html and the stylesheet. */
  inputs: string[];
}

export async function buildRenderer(options: { outDir?: string; minify?: boolean } = {}): Promise<RendererBuild> {
  const bundle = await build({
    entryPoints: [join(HERE, 'src', 'main.ts')],
    absWorkingDir: HERE,
    bundle: true,
    write: false,
    metafile: true,
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
  const page = join(HERE, 'index.html');
  const styles = join(HERE, 'styles.css');
  const html = (await readFile(page, 'utf8')).replace('%CSP%', CONTENT_SECURITY_POLICY);
  const files: Record<string, RendererFile> = {
    'index.html': { contentType: 'text/html; charset=utf-8', body: Buffer.from(html) },
    'app.js': { contentType: 'text/javascript; charset=utf-8', body: Buffer.from(script.contents) },
    'app.css': { contentType: 'text/css; charset=utf-8', body: await readFile(styles) },
  };
  if (options.outDir) {
    await mkdir(options.outDir, { recursive: true });
    for (const [name, file] of Object.entries(files)) await writeFile(join(options.outDir, name), file.body);
  }
  return { files, inputs: [...Object.keys(bundle.metafile.inputs).map((input) => join(HERE, input)), page, styles] };
}
