import { existsSync } from 'node:fs';
import { chromium, type BrowserContext } from 'playwright-core';

/** Debian's Chromium: Playwright's own browsers are downloaded from outside the npm registry. */
const CHROMIUM = '/usr/bin/chromium';

/**
 * A headless Chromium with a fresh profile in `profileDir` and nothing of its own on the network (no
 * background requests, component updates, first-run pages or sync), as every browser test drives it.
 */
export function launchChromium(
  profileDir: string,
  viewport?: { width: number; height: number },
): Promise<BrowserContext> {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing; install Debian's chromium package (.ci/run does).`);
  return chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-sync',
    ],
    ...(viewport ? { viewport } : {}),
  });
}
