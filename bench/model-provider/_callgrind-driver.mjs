// Drives a server running under callgrind (see _callgrind-deltas.sh): four warm-up completions, then per
// phase (a stand-in pace, COUNTxMS) the counters zeroed, K streamed completions one after another, a dump.
import { execFileSync } from 'node:child_process';
import { Buffer } from 'node:buffer';
import http from 'node:http';

const [url, pid, rounds = '6', phases = '10x20,60x20,60x20'] = process.argv.slice(2);
const agent = new http.Agent({ keepAlive: true });

function streamed(prompt) {
  const body = JSON.stringify({
    model: 'sonnet',
    stream: true,
    messages: [
      { role: 'system', content: 'sys' },
      { role: 'user', content: prompt },
    ],
  });
  const target = new URL(`${url}/v1/chat/completions`);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const callgrind = (arg) => execFileSync('callgrind_control', [arg, pid], { encoding: 'utf8' });
for (let i = 0; i < 4; i++) await streamed(`warm up ${i} [stand-in-pace:10x20]`);
for (const phase of phases.split(',')) {
  callgrind('-z');
  for (let i = 0; i < Number(rounds); i++) {
    const status = await streamed(`${phase} ${i} [stand-in-pace:${phase}]`);
    if (status !== 200) throw new Error(`answered ${status}`);
  }
  callgrind(`--dump=${phase}`);
}
