// @ts-check
/**
 * A Stryker reporter (stryker.config.mjs): each mutated module's killed, survived, timed-out and uncovered
 * mutants and its score, and a failed run when one module scores below MIN_SCORE. Stryker's own break
 * threshold looks only at all modules together, where a well-tested module hides a weak one.
 */
import { declareClassPlugin, PluginKind } from '@stryker-mutator/api/plugin';

export const MIN_SCORE = 90;

class ModuleScores {
  /** @param {import('mutation-testing-report-schema').MutationTestResult} report */
  onMutationTestReportReady(report) {
    const rows = Object.entries(report.files).map(([file, { mutants }]) => {
      const count = (/** @type {string} */ status) => mutants.filter((m) => m.status === status).length;
      const row = {
        module: file,
        killed: count('Killed'),
        survived: count('Survived'),
        timeout: count('Timeout'),
        'no-coverage': count('NoCoverage'),
        ignored: count('Ignored'),
      };
      const detected = row.killed + row.timeout;
      const valid = detected + row.survived + row['no-coverage'];
      return { ...row, score: valid === 0 ? 100 : Math.floor((1000 * detected) / valid) / 10 };
    });
    const header = ['module', 'killed', 'survived', 'timeout', 'no-coverage', 'ignored', 'score'];
    const lines = [header, ...rows.map((r) => header.map((h) => String(r[/** @type {keyof typeof r} */ (h)])))];
    const widths = header.map((_, i) => Math.max(...lines.map((l) => l[i].length)));
    const text = lines.map((l) => `| ${l.map((cell, i) => cell.padEnd(widths[i])).join(' | ')} |`);
    text.splice(1, 0, `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`);
    process.stdout.write(`\nMutation score by module (at least ${MIN_SCORE} % each):\n${text.join('\n')}\n`);
    const low = rows.filter((r) => r.score < MIN_SCORE);
    if (low.length > 0) {
      process.stdout.write(`Below ${MIN_SCORE} %: ${low.map((r) => `${r.module} (${r.score} %)`).join(', ')}\n`);
      process.exitCode = 1;
    }
  }
}

export const strykerPlugins = [declareClassPlugin(PluginKind.Reporter, 'module-scores', ModuleScores)];
