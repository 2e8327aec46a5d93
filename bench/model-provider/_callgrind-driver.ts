// Drives a server running under callgrind (see _callgrind-deltas.sh): warm-up completions (WARMUP, 4 by
// default), then per phase the counters zeroed, K completions one after another, a dump. A phase is a
// stand-in pace (COUNTxMS: streamed completions of COUNT deltas) or `plain` (whole, non-streamed completions).
// Run by Node.js 24 itself (its type stripping), so that no loader shares the machine with the traced server.
import { execFileSync } from 'node:child_process';
import { completionRequest } from './_completion-request.ts';

const [url = '', pid = '', rounds = '6', phases = '10x20,60x20,60x20'] = process.argv.slice(2);

function streamed(prompt: string, stream = true): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    completionRequest(url, { system: 'sys', prompt, stream }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    }).on('error', reject);
  });
}

const callgrind = (arg: string) => execFileSync('callgrind_control', [arg, pid], { encoding: 'utf8' });
const warmUp = Number(process.env.WARMUP ?? 4);
for (let i = 0; i < warmUp; i++)
  await streamed(
    `warm up ${i}${phases.startsWith('plain') ? '' : ' [stand-in-pace:10x20]'}`,
    !phases.startsWith('plain'),
  );
for (const phase of phases.split(',')) {
  callgrind('-z');
  for (let i = 0; i < Number(rounds); i++) {
    const status =
      phase === 'plain'
        ? await streamed(`${phase} ${i}`, false)
        : await streamed(`${phase} ${i} [stand-in-pace:${phase}]`);
    if (status !== 200) throw new Error(`answered ${status}`);
  }
  callgrind(`--dump=${phase}`);
}
