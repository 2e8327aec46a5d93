/**
 * Every file a Markdown file names in backticks exists, and every code name it ties to a file is in that
 * file, so a renamed or removed file or export fails here instead of leaving a page that points at nothing.
 *
 * What counts as a name, kept narrow so that nothing else is read as one:
 * - a file or folder: one backticked word that is a path (`services/kit/api.ts`, `main/console/`,
 *   `services/kit/api.ts:89`, `.ci/run`: it has a file extension, or starts at a folder of the
 *   repository or beside the page) or a bare file name with a code extension (`config.ts`); never one
 *   with a placeholder or wildcard (`<data>/…`, `*.test.ts`), a path outside the repository (`~/…`,
 *   `/usr/…`), or what the build and the tools make (`out/`, `release/`, `node_modules/`,
 *   `test-artifacts/`). A path is looked up beside the page, then from the repository's root (one starting
 *   `../` from the page only). A bare
 *   name is looked up in the page's folder and below it (from a page at the root or in `docs/`, anywhere),
 *   and at the root. Data files of the app (`settings.json`, `public-keys.json`) are named bare too, so a
 *   bare `.json` or `.md` is not read as a name.
 * - a code name tied to a file: `` `name` in `file.ts` ``, `` `name` (`file.ts`) ``, `` `file.ts`'s `name` ``
 *   (`name` may be `Type.member` or end in `()`), and in a table whose first column is headed `file`, the
 *   name or call a row's second cell starts with (`` | `app.ts` | `createApp(parts)`: … | ``): it must be
 *   in that row's files. The file must hold the name as a whole word.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const SKIPPED_FOLDERS = new Set(['node_modules', 'out', 'release', 'test-artifacts', '.git', '.venv']);
/** What the build, the installers, the tools and the tests make: not in the repository. */
const MADE_ELSEWHERE = /^(out|release|node_modules|test-artifacts|dist|\.venv)\//;
const CODE_EXTENSION = /\.(ts|mts|cts|mjs|cjs|js|sh|py)$/;
const ANY_EXTENSION = /\.(ts|mts|cts|mjs|cjs|js|sh|py|md|json|ya?ml|txt|html|css|png)$/;

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return SKIPPED_FOLDERS.has(entry.name) ? [] : walk(path);
    return [path];
  });
}

const ALL_FILES = walk(ROOT);
const MARKDOWN = ALL_FILES.filter((f) => f.endsWith('.md'));

/** Text outside fenced blocks: a fence holds an example (a command line, a config file), not a claim. */
function withoutFences(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, (block) => block.replace(/[^\n]/g, ''));
}

/** A page at the root or in docs/ speaks of the whole tree; any other speaks of its own folder. */
function isGlobalPage(page: string): boolean {
  const folder = relative(ROOT, dirname(page));
  return folder === '' || folder === 'docs';
}

function isFolder(path: string): boolean {
  return existsSync(path) && statSync(path).isDirectory();
}

/**
 * The file or folder a backticked word names, with the paths that exist for it (none: a broken name),
 * or `null` when the word is not a name this test reads.
 */
function lookUp(word: string, page: string): { name: string; found: string[] } | null {
  const name = word.replace(/:\d+(-\d+)?$/, ''); // `file.ts:89`
  if (!/^[A-Za-z0-9_.@/-]+$/.test(name) || /^\.[a-z]+$/.test(name)) return null; // spaces, placeholders, `.ts`
  if (/^(\/|~)/.test(name) || MADE_ELSEWHERE.test(name)) return null;
  if (/^\.\.?\//.test(name)) {
    const path = join(dirname(page), name); // `../kit/README.md`: from the page only
    return { name, found: existsSync(path) ? [path] : [] };
  }
  const folder = name.endsWith('/');
  const segments = name.replace(/\/$/, '').split('/');
  if (segments.length > 1 || folder) {
    // Without an extension, a word is a path only when it starts at a folder of the repository (`main/console`,
    // `.ci/run`) or beside the page (`engines/`): `owner/name`, `pull/<n>` and `application/json` are not.
    const startsAt = (dir: string) => isFolder(join(dir, segments[0]!));
    if (!ANY_EXTENSION.test(name) && !startsAt(ROOT) && !startsAt(dirname(page))) return null;
    const candidates = [join(dirname(page), name), join(ROOT, name)];
    return { name, found: candidates.filter((c) => existsSync(c) && (!folder || isFolder(c))) };
  }
  if (!CODE_EXTENSION.test(name)) return null;
  const within = isGlobalPage(page) ? ROOT : dirname(page);
  // Files at the root (`eslint.config.js`) are named bare from anywhere.
  const found = ALL_FILES.filter(
    (f) => (f.startsWith(within + sep) && f.endsWith(sep + name)) || f === join(ROOT, name),
  );
  return { name, found };
}

/** The backticked words of a text, each with the line it is on. */
function spans(text: string): { word: string; line: number }[] {
  return text
    .split('\n')
    .flatMap((line, i) => [...line.matchAll(/`([^`\n]+)`/g)].map((m) => ({ word: m[1]!, line: i + 1 })));
}

const IDENT = String.raw`[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)?`;
const FILE = String.raw`[A-Za-z0-9_.@/-]+\.(?:ts|mts|mjs|cjs|js)`;
/** `name` in `file.ts`, `name` (`file.ts`), `file.ts`'s `name`: [pattern, whether the name comes first]. */
const TIED: [RegExp, boolean][] = [
  [new RegExp(String.raw`\`(${IDENT})(?:\(\))?\` in \`(${FILE})\``, 'g'), true],
  [new RegExp(String.raw`\`(${IDENT})(?:\(\))?\` \(\`(${FILE})\`[),;]`, 'g'), true],
  [new RegExp(String.raw`\`(${FILE})\`'s \`(${IDENT})(?:\(\))?\``, 'g'), false],
];
const LEADING_NAME = new RegExp(String.raw`^\`(${IDENT})(?:\([^\`]*\))?\``);

/** Whether a source file holds every part of a (possibly dotted) name as a whole word. */
function holds(file: string, name: string): boolean {
  const text = readFileSync(file, 'utf8');
  return name
    .split('.')
    .every((part) => new RegExp(String.raw`(^|[^\w$])${part.replace(/\$/g, '\\$')}($|[^\w$])`).test(text));
}

interface Tie {
  line: number;
  name: string;
  files: string[];
}

/** Every code name a page ties to a file, with the file words it names. */
function ties(text: string): Tie[] {
  const out: Tie[] = [];
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    for (const [pattern, nameFirst] of TIED) {
      for (const m of line.matchAll(pattern))
        out.push({ line: i + 1, name: nameFirst ? m[1]! : m[2]!, files: [nameFirst ? m[2]! : m[1]!] });
    }
  });
  // A table whose first column is headed `file`: the name a row's description starts with is its file's.
  let inFileTable = false;
  lines.forEach((line, i) => {
    if (!line.startsWith('|')) {
      inFileTable = false;
      return;
    }
    const cells = line.split('|').slice(1, -1);
    const first = cells[0]?.trim() ?? '';
    if (/^files?$/i.test(first)) {
      inFileTable = true;
      return;
    }
    if (!inFileTable || /^[-:\s]+$/.test(first)) return;
    const files = [...first.matchAll(/`([^`]+)`/g)].map((m) => m[1]!).filter((w) => CODE_EXTENSION.test(w));
    const lead = cells[1]?.trim().match(LEADING_NAME);
    if (files.length > 0 && lead) out.push({ line: i + 1, name: lead[1]!, files });
  });
  return out;
}

function brokenNames(page: string, text: string): string[] {
  return spans(withoutFences(text)).flatMap(({ word, line }) => {
    const named = lookUp(word, page);
    return named && named.found.length === 0 ? [`${relative(ROOT, page)}:${line}: ${word}`] : [];
  });
}

function wrongTies(page: string, text: string): string[] {
  return ties(withoutFences(text)).flatMap((tie) => {
    const files = tie.files.flatMap((f) => lookUp(f, page)?.found ?? []).filter((f) => statSync(f).isFile());
    const where = `${relative(ROOT, page)}:${tie.line}: \`${tie.name}\` in ${tie.files.join(', ')}`;
    if (files.length === 0) return [`${where}: no such file`];
    return files.some((f) => holds(f, tie.name)) ? [] : [`${where}: not there`];
  });
}

describe('names in Markdown files', () => {
  const kitReadme = join(ROOT, 'services', 'kit', 'README.md');

  it('finds the pages and the names it checks', () => {
    // A scan that found nothing would pass every check below.
    expect(MARKDOWN).toContain(kitReadme);
    const named = spans(withoutFences(readFileSync(kitReadme, 'utf8'))).filter((s) => lookUp(s.word, kitReadme));
    expect(named.length).toBeGreaterThan(10);
    expect(MARKDOWN.flatMap((p) => ties(withoutFences(readFileSync(p, 'utf8')))).length).toBeGreaterThan(20);
  });

  it('reads names as meant: a path, a bare file, a tie, and what is not a name', () => {
    const page = kitReadme;
    expect(lookUp('services/kit/api.ts:89', page)?.found).toEqual([join(ROOT, 'services/kit/api.ts')]);
    expect(lookUp('api.ts', page)?.found).toEqual([join(ROOT, 'services/kit/api.ts')]);
    expect(lookUp('main/console/', page)?.found).toEqual([join(ROOT, 'main/console/')]);
    expect(lookUp('eslint.config.js', page)?.found).toEqual([join(ROOT, 'eslint.config.js')]);
    expect(lookUp('services/kit/no-such-file.ts', page)?.found).toEqual([]);
    expect(lookUp('main/no-such-folder/', page)?.found).toEqual([]);
    expect(lookUp('no-such-file.ts', page)?.found).toEqual([]);
    // A bare name is looked for below its page's folder: the kit's README does not name the gateway's files.
    expect(lookUp('etag-cache.ts', page)?.found).toEqual([]);
    for (const notAName of [
      '<data>/public-keys.json',
      '~/.claude/CLAUDE.md',
      'application/json',
      'owner/name',
      '*.test.ts',
      'out/main/app.mjs',
      'settings.json',
      'npm run build',
      '.ts',
    ])
      expect(lookUp(notAName, page), notAName).toBeNull();
    const tied = ties(
      "`createApp` in `app.ts`; `PROFILE_RULE` (`profile.ts`), `paging.ts`'s `readPage()`\n\n" +
        '| file | what |\n| - | - |\n| `api.ts` | `screen({ params })` and `Api` |\n| `app.ts` | made by `createApp()` |\n',
    );
    expect(tied.map((t) => [t.name, t.files])).toEqual([
      ['createApp', ['app.ts']],
      ['PROFILE_RULE', ['profile.ts']],
      ['readPage', ['paging.ts']],
      ['screen', ['api.ts']],
    ]);
  });

  it('fails on a renamed file, folder or export', () => {
    // The kit's README as it is passes; the same page with one name changed does not.
    const text = readFileSync(kitReadme, 'utf8');
    expect(brokenNames(kitReadme, text)).toEqual([]);
    expect(brokenNames(kitReadme, text + '\n`services/kit/apis.ts`\n')).toHaveLength(1);
    expect(brokenNames(kitReadme, text + '\n`main/consoles/`\n')).toHaveLength(1);
    expect(brokenNames(kitReadme, text + '\n`verified-token.ts`\n')).toHaveLength(1);
    expect(wrongTies(kitReadme, text + '\n`createApps` in `app.ts`\n')).toHaveLength(1);
    expect(wrongTies(kitReadme, text + '\n`createApp` in `apps.ts`\n')).toHaveLength(1);
  });

  it('names only files and folders that exist', () => {
    const missing = MARKDOWN.flatMap((page) => brokenNames(page, readFileSync(page, 'utf8')));
    expect(missing, 'rename it in the page, or write the path from the page or the root').toEqual([]);
  });

  it('ties each code name to a file that holds it', () => {
    const wrong = MARKDOWN.flatMap((page) => wrongTies(page, readFileSync(page, 'utf8')));
    expect(wrong, 'name the file that holds it, or the name it has now').toEqual([]);
  });
});
