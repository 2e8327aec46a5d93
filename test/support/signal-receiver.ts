/**
 * A hub's signal endpoint for the console tests: it answers every signal 200 and records it, and a test
 * waits for an arrival (the event), never for a time.
 */
import { EventEmitter, once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Arrival {
  headers: IncomingHttpHeaders;
  body: string;
}

export interface SignalReceiver {
  /** Where signals for this receiver go (under `prefix`). */
  url: string;
  /** The prefix to add to REPOHOST_SIGNAL_URL_PREFIXES. */
  prefix: string;
  /** Signals that arrived for one subscription (by `webhook-id`). */
  of(subscriptionId: string): Arrival[];
  /** Resolves once `count` signals of that subscription have arrived. */
  arrived(subscriptionId: string, count?: number): Promise<Arrival[]>;
  close(): Promise<void>;
}

export async function startSignalReceiver(): Promise<SignalReceiver> {
  const arrivals: Arrival[] = [];
  const events = new EventEmitter();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      arrivals.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200).end();
      events.emit('arrival');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const prefix = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hub`;
  const of = (id: string) => arrivals.filter((a) => a.headers['webhook-id'] === `msg_${id}`);
  return {
    url: `${prefix}/signals`,
    prefix,
    of,
    async arrived(id, count = 1) {
      while (of(id).length < count) await once(events, 'arrival');
      return of(id);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
