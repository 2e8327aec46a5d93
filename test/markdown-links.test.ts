/**
 * Every relative link of every Markdown file points at a file that exists, and its `#anchor`, if any,
 * at a heading of that file (GitHub's rule for heading anchors).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const SKIPPED_FOLDERS = new Set(['node_modules', 'out', 'release', 'test-artifacts', '.git', '.venv']);

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return SKIPPED_FOLDERS.has(entry.name) ? [] : markdownFiles(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

/** The text a reader sees as prose: fenced blocks and code spans hold examples, not links. */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchors of a file's headings: lower case, punctuation dropped, spaces as dashes, repeats numbered. */
function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const [, heading] of readFileSync(file, 'utf8')
    .replace(/^```[\s\S]*?^```/gm, '')
    .matchAll(/^#{1,6}\s+(.+)$/gm)) {
    const slug = heading!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

describe('links between Markdown files', () => {
  const files = markdownFiles(ROOT);

  it('finds the Markdown files and their links', () => {
    expect(files.map((f) => relative(ROOT, f))).toContain('README.md');
    expect(prose(readFileSync(join(ROOT, 'README.md'), 'utf8'))).toMatch(/\]\(docs\/configuration\.md\)/);
  });

  it('points every relative link at a file that exists, and every anchor at a heading', () => {
    const broken: string[] = [];
    for (const file of files) {
      for (const [, target] of prose(readFileSync(file, 'utf8')).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target!)) continue; // https:, mailto: and the like
        const [path, anchor] = target!.split('#') as [string, string | undefined];
        const to = path === '' ? file : join(dirname(file), decodeURIComponent(path));
        const where = `${relative(ROOT, file)} → ${target}`;
        if (!existsSync(to)) broken.push(`${where}: no such file`);
        else if (anchor !== undefined && statSync(to).isFile() && to.endsWith('.md') && !anchors(to).has(anchor))
          broken.push(`${where}: no such heading`);
      }
    }
    expect(broken).toEqual([]);
  });
});
