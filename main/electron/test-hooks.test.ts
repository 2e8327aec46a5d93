/**
 * The test hooks' channel: the main process connects to the test's loopback listener and serves the
 * hooks over that one TCP connection (the same on Linux, macOS and Windows, where a GUI program's stdin
 * is not reliably a pipe). Real sockets here; the hooks are a small in-memory set (desktop.test.ts
 * checks the real ones behind runDesktop).
 */
import { createServer, type Server, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { connectTestHooks, testHooksAddress, type DesktopTestHooks, type TestHookEvent } from './test-hooks.ts';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

/** A loopback listener like the Electron test's: each connection's JSON lines, and a way to wait for one. */
async function listener() {
  const connections: Array<{ socket: Socket; lines: Array<Record<string, unknown>> }> = [];
  const waiters: Array<() => void> = [];
  const wake = () => waiters.splice(0).forEach((w) => w());
  const server = createServer((socket) => {
    const connection = { socket, lines: [] as Array<Record<string, unknown>> };
    connections.push(connection);
    createInterface({ input: socket }).on('line', (line) => {
      connection.lines.push(JSON.parse(line) as Record<string, unknown>);
      wake();
    });
    socket.on('close', wake);
    wake();
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const until = async <T>(find: () => T | undefined): Promise<T> => {
    for (;;) {
      const found = find();
      if (found !== undefined) return found;
      await new Promise<void>((w) => waiters.push(w));
    }
  };
  return { address: `127.0.0.1:${(server.address() as { port: number }).port}`, connections, until };
}

function memoryHooks() {
  const listeners: Array<(event: TestHookEvent) => void> = [];
  let checked = false;
  const hooks: DesktopTestHooks = {
    trayMenu: () => [
      {
        id: 'close-to-tray',
        label: 'Keep running in the tray when the window closes',
        type: 'checkbox',
        enabled: true,
        checked,
      },
    ],
    clickTrayItem: (id) => {
      if (id !== 'close-to-tray') return false;
      checked = !checked;
      return true;
    },
    window: () => undefined,
    closeWindow: () => false,
    services: () => [{ name: 'identity', state: 'ready', port: 8001 }],
    onEvent: (listener) => listeners.push(listener),
  };
  return { hooks, report: (event: TestHookEvent) => listeners.forEach((l) => l(event)) };
}

describe('the test hooks over a loopback connection', () => {
  it('connects to the listener HUB_SERVICES_TEST_HOOKS names, says it is ready, answers commands and reports events', async () => {
    const test = await listener();
    const { hooks, report } = memoryHooks();
    const said: string[] = [];
    connectTestHooks(hooks, test.address, (line) => said.push(line));
    // Reported before the connection is accepted: queued by the socket, not lost.
    report({ event: 'services', services: hooks.services(), tooltip: 'Hub services: 1 of 1 ready' });
    const connection = await test.until(() => test.connections[0]);
    await test.until(() => connection.lines.find((l) => l.event === 'hooks-ready'));
    expect(connection.lines.find((l) => l.event === 'services')).toEqual({
      event: 'services',
      services: [{ name: 'identity', state: 'ready', port: 8001 }],
      tooltip: 'Hub services: 1 of 1 ready',
    });

    connection.socket.write(
      '{"id":1,"command":"click","item":"close-to-tray"}\n{"id":2,"command":"menu"}\n{"id":3,"command":"run","item":"process.exit()"}\n',
    );
    expect(await test.until(() => connection.lines.find((l) => l.id === 1))).toEqual({ id: 1, clicked: true });
    expect(
      ((await test.until(() => connection.lines.find((l) => l.id === 2))).menu as Array<{ checked: boolean }>)[0]!
        .checked,
    ).toBe(true);
    expect((await test.until(() => connection.lines.find((l) => l.id === 3))).error).toMatch(/^commands: /);
    expect(test.connections).toHaveLength(1);
    expect(said).toEqual([]);
    connection.socket.destroy();
  });

  it('takes only a loopback address and port, and says what to set otherwise', () => {
    expect(testHooksAddress('127.0.0.1:40123')).toEqual({ host: '127.0.0.1', port: 40123 });
    expect(testHooksAddress('[::1]:40123')).toEqual({ host: '::1', port: 40123 });
    for (const value of ['1', '10.0.0.2:40123', 'example.com:80', '127.0.0.1:0', '127.0.0.1:70000', '127.0.0.1']) {
      expect(testHooksAddress(value), value).toEqual({
        error:
          "HUB_SERVICES_TEST_HOOKS must be the test's loopback listener as 127.0.0.1:<port>; the test hooks are off.",
      });
    }
    const said: string[] = [];
    connectTestHooks(memoryHooks().hooks, '1', (line) => said.push(line));
    expect(said).toEqual([
      "HUB_SERVICES_TEST_HOOKS must be the test's loopback listener as 127.0.0.1:<port>; the test hooks are off.",
    ]);
  });

  it('reports a listener it cannot reach in one line and does not stop the app', async () => {
    const test = await listener();
    const address = test.address;
    await new Promise((resolve) => servers.pop()!.close(resolve));
    const said: string[] = [];
    await new Promise<void>((resolve) =>
      connectTestHooks(memoryHooks().hooks, address, (line) => {
        said.push(line);
        resolve();
      }),
    );
    expect(said).toEqual([
      `The test hooks' connection to ${address} failed (ECONNREFUSED); the app runs on without them.`,
    ]);
  });
});
