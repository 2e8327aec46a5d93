/**
 * For a test's own small program that stands in for a service under the real supervisor: it speaks the
 * supervisor's side of the channel as the kit does (services/kit/supervised.ts): asks for the port's
 * socket, listens on it and hands a copy back, and answers liveness pings, unless the test's program
 * blocks its own event loop.
 */
import { createServer } from 'node:http';

export function serveSupervised(handler) {
  const server = createServer(handler);
  process.on('message', (message, handle) => {
    if (message?.hub === 'listen' && handle) server.listen(handle, () => process.send({ hub: 'listening' }, handle));
    if (message?.hub === 'ping') process.send({ hub: 'pong', id: message.id });
  });
  process.send({ hub: 'listen' });
  return server;
}
