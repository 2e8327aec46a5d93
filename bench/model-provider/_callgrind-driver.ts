// Drives a server running under callgrind (see _callgrind-deltas.sh): four warm-up completions, then per
// phase (a stand-in pace, COUNTxMS) the counters zeroed, K streamed completions one after another, a dump.
// Run by Node.js 24 itself (its type stripping), so that no loader shares the machine with the traced server.
import { execFileSync } from 'node:child_process';
import { completionRequest } from './_completion-request.ts';

const [url = '', pid = '', rounds = '6', phases = '10x20,60x20,60x20'] = process.argv.slice(2);

function streamed(prompt: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    completionRequest(url, { system: 'sys', prompt, stream: true }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    }).on('error', reject);
  });
}

const callgrind = (arg: string) => execFileSync('callgrind_control', [arg, pid], { encoding: 'utf8' });
for (let i = 0; i < 4; i++) await streamed(`warm up ${i} [stand-in-pace:10x20]`);
for (const phase of phases.split(',')) {
  callgrind('-z');
  for (let i = 0; i < Number(rounds); i++) {
    const status = await streamed(`${phase} ${i} [stand-in-pace:${phase}]`);
    if (status !== 200) throw new Error(`answered ${status}`);
  }
  callgrind(`--dump=${phase}`);
}
