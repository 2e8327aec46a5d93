/**
 * The page's icons are the app's own: the tray icons in renderer/src/icons.ts and the favicon in
 * renderer/index.html are the files in assets/, byte for byte (regenerate both from there).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TRAY_ICONS } from '../renderer/src/icons.ts';
import { ROOT } from './support/process.ts';

const dataUrl = (file: string) =>
  `data:image/png;base64,${readFileSync(join(ROOT, 'assets', file)).toString('base64')}`;

describe('the console\u2019s icons', () => {
  it.each(Object.keys(TRAY_ICONS))('the %s tray icon is assets/tray-%s@2x.png', (state) => {
    expect(TRAY_ICONS[state as keyof typeof TRAY_ICONS]).toBe(dataUrl(`tray-${state}@2x.png`));
  });

  it('the favicon is assets/icon.png', () => {
    // The formatter may break the tag over lines: compare with white space folded.
    const html = readFileSync(join(ROOT, 'renderer', 'index.html'), 'utf8').replace(/\s+/g, ' ');
    expect(html).toContain(`<link rel="icon" type="image/png" sizes="512x512" href="${dataUrl('icon.png')}" />`);
  });
});
