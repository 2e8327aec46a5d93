/**
 * Peak memory of `npm run persona-store -- import` (issue 20, item 7): writes export files of growing size
 * (notes of 0.5-4 KB of made-up prose; one in ten holds an address or URL, so the credential screen's
 * secretlint pass reads it), imports each into a new SQLite file through the command line as a child
 * process, and prints the file's size, the outcome and the command's peak resident memory (maxRSS).
 * The 300 MB file is refused before it is read at the default PERSONA_MAX_IMPORT_BYTES (64 MiB); with
 * `--raise`, it is also imported with the limit raised past it. Then the audit's wide files: 59 MB under the
 * default limit, whose one field value has 5.5 million members (an array of short strings, an object of
 * short members), which an import must refuse within 30 s and 1 GiB. With `--many`, also the most entries a
 * 59 MB file can hold (about 300,000 notes of one character), imported (several minutes).
 *
 *   npx tsx bench/persona-store/import-memory.ts [--raise] [--many] [--smoke]   (or: npm run bench -- persona-store)
 */
import { spawnSync } from 'node:child_process';
import { closeSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { tempDir } from '../../test/support/identity.ts';
import { ROOT } from '../../test/support/process.ts';

const smoke = process.argv.includes('--smoke');
const raise = process.argv.includes('--raise');
const many = process.argv.includes('--many');
const MB = 1_000_000;
const WORDS = [
  'lamp',
  'keeper',
  'harbour',
  'north',
  'storm',
  'ledger',
  'violet',
  'orchard',
  'signal',
  'morning',
  'quiet',
  'rope',
  'tide',
  'window',
  'letter',
  'garden',
];

/** Writes an export of about `bytes` bytes, note by note, without holding it in memory. */
function writeExport(file: string, bytes: number): number {
  const fd = openSync(file, 'w');
  const at = '2026-11-01T00:00:00.000Z';
  writeSync(
    fd,
    `{"format":"persona-export/1","persona":{"profile":"big","display_name":"Big","pronouns":null,"language":"en","tone":null,"verbosity":null,"speaking_style":null,"created_at":"${at}","updated_at":"${at}"},"fields":[],"notes":[`,
  );
  let written = 0;
  let n = 0;
  let seed = 7;
  const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31);
  while (written < bytes) {
    let content = n % 10 === 0 ? `Write to keeper${n}@example.org or see https://example.org/log/${n}. ` : '';
    const length = 500 + (next() % 3_500);
    while (content.length < length) content += `${WORDS[next() % WORDS.length]} `;
    const entry = JSON.stringify({
      id: `note-${n}`,
      kind: 'observation',
      content: content.trim(),
      source: 'owner',
      asserted_by: 'persona',
      pinned: false,
      revision: 1,
      written_at: at,
      revised_at: at,
    });
    written += writeSync(fd, `${n === 0 ? '' : ','}${entry}`);
    n++;
  }
  writeSync(fd, '],"fields_next_after":null,"notes_next_after":null}');
  closeSync(fd);
  return n;
}

function importPeak(
  file: string,
  env: Record<string, string>,
): { status: number | null; peakMb: number; said: string; seconds: number } {
  const dataDir = tempDir('persona-import-bench-data');
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PERSONA_')));
  const started = Date.now();
  const r = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '--import',
      pathToFileURL(join(import.meta.dirname, '_peak-rss.mjs')).href,
      join(ROOT, 'services', 'persona-store', 'cli.ts'),
      'import',
      file,
      '--account',
      'acct',
    ],
    { cwd: ROOT, env: { ...clean, PERSONA_DATA_DIR: dataDir, ...env }, encoding: 'utf8', maxBuffer: 16 * MB },
  );
  rmSync(dataDir, { recursive: true, force: true });
  const peak = Number(/peak-rss-kb (\d+)/.exec(r.stderr)?.[1] ?? NaN);
  const said = (r.stdout + r.stderr).split('\n').find((l) => /imported|persona-store:/.test(l)) ?? '';
  return {
    status: r.status,
    peakMb: Math.round(peak / 1024),
    said: said.slice(0, 140),
    seconds: (Date.now() - started) / 1000,
  };
}

const folder = tempDir('persona-import-bench');
try {
  const sizes = smoke ? [1, 3] : [10, 64, 300];
  const limit = smoke ? 2 * MB : undefined;
  console.log('import of an export file through the command line (SQLite target), peak resident memory of the command');
  console.log(
    `${'file'.padEnd(10)} ${'notes'.padStart(8)} ${'limit'.padEnd(22)} ${'exit'.padStart(4)} ${'peak RSS'.padStart(9)} ${'time'.padStart(7)}   outcome`,
  );
  for (const size of sizes) {
    const file = join(folder, `export-${size}mb.json`);
    const notes = writeExport(file, size * MB);
    const bytes = statSync(file).size;
    const runs: [string, Record<string, string>][] = [
      [
        limit ? `${limit / MB} MB (smoke)` : 'default (64 MiB)',
        limit ? { PERSONA_MAX_IMPORT_BYTES: String(limit) } : {},
      ],
    ];
    if (raise && bytes > 64 * 1024 * 1024)
      runs.push([`raised to ${Math.ceil(bytes / MB)} MB`, { PERSONA_MAX_IMPORT_BYTES: String(bytes) }]);
    for (const [name, env] of runs) {
      const r = importPeak(file, env);
      console.log(
        `${`${(bytes / MB).toFixed(0)} MB`.padEnd(10)} ${String(notes).padStart(8)} ${name.padEnd(22)} ${String(r.status).padStart(4)} ${`${r.peakMb} MB`.padStart(9)} ${`${r.seconds.toFixed(0)} s`.padStart(7)}   ${r.said}`,
      );
    }
    rmSync(file);
  }
  const members = smoke ? 100_000 : 5_500_000;
  const shapes: [string, (i: number) => string, string, string][] = [
    ['array', (i) => `"w${String(i).padStart(7, '0')}"`, '[', ']'],
    ['object', (i) => `"${i.toString(36)}":0`, '{', '}'],
  ];
  for (const [shape, member, open, close] of shapes) {
    const file = join(folder, `wide-${shape}.json`);
    writeWide(file, members, member, open, close);
    const bytes = statSync(file).size;
    const r = importPeak(file, {});
    console.log(
      `${`${(bytes / MB).toFixed(0)} MB`.padEnd(10)} ${`1 ${shape}`.padStart(8)} ${`${members.toLocaleString('en-US')} members`.padEnd(22)} ${String(r.status).padStart(4)} ${`${r.peakMb} MB`.padStart(9)} ${`${r.seconds.toFixed(0)} s`.padStart(7)}   ${r.said}`,
    );
    rmSync(file);
  }
  if (many) {
    const file = join(folder, 'many-notes.json');
    const notes = writeMany(file, (smoke ? 1 : 59) * MB);
    const bytes = statSync(file).size;
    const r = importPeak(file, {});
    console.log(
      `${`${(bytes / MB).toFixed(0)} MB`.padEnd(10)} ${String(notes).padStart(8)} ${'default, 1-char notes'.padEnd(22)} ${String(r.status).padStart(4)} ${`${r.peakMb} MB`.padStart(9)} ${`${r.seconds.toFixed(0)} s`.padStart(7)}   ${r.said}`,
    );
    rmSync(file);
  }
} finally {
  rmSync(folder, { recursive: true, force: true });
}

/** An export of one field whose value is one array or object of `count` members, written a slice at a time. */
function writeWide(file: string, count: number, member: (i: number) => string, open: string, close: string): void {
  const at = '2026-11-01T00:00:00.000Z';
  const fd = openSync(file, 'w');
  writeSync(
    fd,
    `{"format":"persona-export/1","persona":{"profile":"wide","display_name":"Wide","pronouns":null,"language":null,"tone":null,"verbosity":null,"speaking_style":null,"created_at":"${at}","updated_at":"${at}"},` +
      `"fields":[{"key":"wide","description":"one value, very wide","value":${open}`,
  );
  for (let from = 0; from < count; from += 100_000) {
    const slice = Array.from({ length: Math.min(100_000, count - from) }, (_, i) => member(from + i)).join(',');
    writeSync(fd, `${from === 0 ? '' : ','}${slice}`);
  }
  writeSync(
    fd,
    `${close},"source":"owner","asserted_by":"persona","pinned":false,"revision":1,"created_at":"${at}","updated_at":"${at}"}],"notes":[],"fields_next_after":null,"notes_next_after":null}`,
  );
  closeSync(fd);
}

/** An export of as many notes of one character as `bytes` holds: the most entries a file of that size can bring. */
function writeMany(file: string, bytes: number): number {
  const at = '2026-11-01T00:00:00.000Z';
  const fd = openSync(file, 'w');
  let written = writeSync(
    fd,
    `{"format":"persona-export/1","persona":{"profile":"many","display_name":"Many","pronouns":null,"language":null,"tone":null,"verbosity":null,"speaking_style":null,"created_at":"${at}","updated_at":"${at}"},"fields":[],"notes":[`,
  );
  let n = 0;
  let chunk = '';
  while (written + chunk.length < bytes) {
    chunk += `${n === 0 ? '' : ','}{"id":"n${n}","kind":"lesson","content":"x","source":"owner","asserted_by":"persona","pinned":false,"revision":1,"written_at":"${at}","revised_at":"${at}"}`;
    n++;
    if (chunk.length > MB) {
      written += writeSync(fd, chunk);
      chunk = '';
    }
  }
  writeSync(fd, `${chunk}],"fields_next_after":null,"notes_next_after":null}`);
  closeSync(fd);
  return n;
}
