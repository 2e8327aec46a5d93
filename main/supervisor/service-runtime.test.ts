/** serviceRuntime: the one place that decides which process runs the services. */
import { describe, expect, it } from 'vitest';
import { serviceRuntime } from './service-runtime.ts';

describe('which process runs the services', () => {
  it('headless: Node children of this Node', () => {
    expect(serviceRuntime({}, { HUB_SERVICES_NODE: '/elsewhere/node' }, '/usr/bin/node')).toMatchObject({
      kind: 'node-child',
      node: '/usr/bin/node',
    });
  });

  it('the installed app: Electron utility processes', () => {
    expect(
      serviceRuntime(
        { electronApp: { isPackaged: true } },
        { HUB_SERVICES_NODE: '/usr/bin/node' },
        '/opt/Hub services/hub-services',
      ).kind,
    ).toBe('utility-process');
  });

  it('the desktop app in development: Node children of the Node that ran npm, never Electron\u2019s own', () => {
    const electron = '/work/node_modules/electron/dist/electron';
    expect(
      serviceRuntime(
        { electronApp: { isPackaged: false } },
        { HUB_SERVICES_NODE: '/home/me/.nvm/versions/node/v24.21.0/bin/node' },
        electron,
      ),
    ).toMatchObject({
      kind: 'node-child',
      node: '/home/me/.nvm/versions/node/v24.21.0/bin/node',
    });
    // Started by another npm script (`npx electron .`): npm names its Node too.
    expect(
      serviceRuntime({ electronApp: { isPackaged: false } }, { npm_node_execpath: '/usr/local/bin/node' }, electron),
    ).toMatchObject({ node: '/usr/local/bin/node' });
    expect(serviceRuntime({ electronApp: { isPackaged: false } }, {}, electron)).toMatchObject({
      kind: 'node-child',
      node: 'node',
    });
  });
});
