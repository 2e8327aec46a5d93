/**
 * Serves the console build at app://console/ from memory: a standard, secure origin of its own, so
 * the CSP's 'self' and the IPC sender check have one exact origin to compare against.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Protocol } from 'electron';
import { buildRenderer, CONTENT_SECURITY_POLICY, type RendererFile } from '../../renderer/build.ts';
import { PROJECT_ROOT } from '../supervisor/launcher.ts';
import { APP_HOST, APP_SCHEME } from './security.ts';

export const PREBUILT_RENDERER = join(PROJECT_ROOT, 'out', 'renderer');

const TYPES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
};

export const PRIVILEGED_SCHEME = { scheme: APP_SCHEME, privileges: { standard: true, secure: true, supportFetchAPI: false, corsEnabled: false } };

/** The packaged app carries a prebuilt console (out/renderer); a development run builds it on start. */
export async function loadRendererFiles(dir = PREBUILT_RENDERER): Promise<Record<string, RendererFile>> {
  if (Object.keys(TYPES).every((name) => existsSync(join(dir, name)))) {
    return Object.fromEntries(Object.entries(TYPES).map(([name, contentType]) => [name, { contentType, body: readFileSync(join(dir, name)) }]));
  }
  return (await buildRenderer()).files;
}

/** The answer for one app:// request: a file of the build, or 404; never anything outside it. */
export function rendererResponse(files: Record<string, RendererFile>, url: string): Response {
  const parsed = new URL(url);
  const name = parsed.pathname.replace(/^\/+/, '') || 'index.html';
  const file = parsed.host === APP_HOST ? files[name] : undefined;
  if (!file) return new Response('Not found', { status: 404, headers: { 'content-type': 'text/plain' } });
  return new Response(new Uint8Array(file.body), {
    headers: { 'content-type': file.contentType, 'content-security-policy': CONTENT_SECURITY_POLICY, 'x-content-type-options': 'nosniff' },
  });
}

export function serveRenderer(protocol: Protocol, files: Record<string, RendererFile>): void {
  protocol.handle(APP_SCHEME, (request) => rendererResponse(files, request.url));
}
