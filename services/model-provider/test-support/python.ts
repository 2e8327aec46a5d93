import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT } from '../../../test/support/process.ts';

/** The official Python openai client as the tests drive it (see its docstring). */
export const PYTHON_CLIENT = join(dirname(fileURLToPath(import.meta.url)), 'python-client.py');

/**
 * A Python with the pinned openai package (test-support/requirements.txt): the project's .venv (which
 * .ci/run makes), else python3; `reason` says how to make one when there is none. Outside CI a test file
 * skips its Python cases with that reason printed; in CI (`CI=true`) a missing client fails them.
 */
export function findPython(): { python?: string; reason?: string } {
  for (const python of [join(ROOT, '.venv', 'bin', 'python'), 'python3']) {
    if (python.includes('/') && !existsSync(python)) continue;
    const probe = spawnSync(python, ['-c', 'import openai'], { encoding: 'utf8' });
    if (probe.status === 0) return { python };
  }
  return {
    reason: `no Python with the openai package (tried ${join(ROOT, '.venv', 'bin', 'python')} and python3); make it with: python3 -m venv .venv && .venv/bin/pip install -r services/model-provider/test-support/requirements.txt`,
  };
}
