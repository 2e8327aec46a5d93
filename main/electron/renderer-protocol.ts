/**
 * Serves the console build at app://console/ from memory: a standard, secure origin of its own, so
 * the CSP's 'self' and the IPC sender check have one exact origin to compare against.
 */
import type { Protocol } from 'electron';
import { CONTENT_SECURITY_POLICY, readConsoleBuild, targetDir } from '../supervisor/build-outputs.ts';
import { APP_HOST, APP_SCHEME } from './security.ts';

export interface ConsoleFile {
  contentType: string;
  body: Buffer;
}

export const PRIVILEGED_SCHEME = {
  scheme: APP_SCHEME,
  privileges: { standard: true, secure: true, supportFetchAPI: false, corsEnabled: false },
};

/** The console's built files (out/renderer, which the installed app carries and `npm start` builds first). */
export function loadRendererFiles(dir = targetDir('console')): Map<string, ConsoleFile> {
  const built = readConsoleBuild(dir);
  if ('missing' in built) throw new Error(built.missing);
  return new Map(Object.entries(built.files));
}

/**
 * The answer for one app:// request: a file of the build, or 404; never anything outside it. A Map, so
 * that a path naming an object's own property (/constructor, /__proto__) is just a file that is not there.
 */
export function rendererResponse(files: ReadonlyMap<string, ConsoleFile>, url: string): Response {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return notFound();
  }
  let name: string;
  try {
    name = decodeURIComponent(parsed.pathname.replace(/^\/+/, '')) || 'index.html';
  } catch {
    return notFound();
  }
  const file = parsed.host === APP_HOST ? files.get(name) : undefined;
  if (!file) return notFound();
  return new Response(new Uint8Array(file.body), {
    headers: {
      'content-type': file.contentType,
      'content-security-policy': CONTENT_SECURITY_POLICY,
      'x-content-type-options': 'nosniff',
    },
  });
}

function notFound(): Response {
  return new Response('Not found', { status: 404, headers: { 'content-type': 'text/plain' } });
}

export function serveRenderer(protocol: Protocol, files: ReadonlyMap<string, ConsoleFile>): void {
  protocol.handle(APP_SCHEME, (request) => rendererResponse(files, request.url));
}
