/**
 * Which process runs the services follows the native module they load (better-sqlite3), whose build
 * fits one ABI only:
 * - headless (`npm run serve`): Node children of this Node, the one npm installed better-sqlite3 for;
 * - the desktop app in development (`npm start`, not packaged): Node children of the Node that ran npm
 *   (start.ts names it in HUB_SERVICES_NODE), for the same reason: Electron's own Node has another ABI;
 * - the installed app (`app.isPackaged`): Electron utility processes, running the better-sqlite3 that
 *   electron-builder rebuilt for Electron.
 */
export type ServiceRuntime =
  { kind: 'node-child'; node: string; why: string } | { kind: 'utility-process'; why: string };

export const SERVICES_NODE_VARIABLE = 'HUB_SERVICES_NODE';

export function serviceRuntime(
  where: { electronApp?: { readonly isPackaged: boolean } } = {},
  env: NodeJS.ProcessEnv = process.env,
  execPath: string = process.execPath,
): ServiceRuntime {
  if (!where.electronApp)
    return {
      kind: 'node-child',
      node: execPath,
      why: 'headless: the services run with this Node.js, which better-sqlite3 was installed for',
    };
  if (where.electronApp.isPackaged) {
    return {
      kind: 'utility-process',
      why: 'installed app: the services run in Electron, whose better-sqlite3 electron-builder rebuilt for it',
    };
  }
  // npm names its own Node to scripts too, for an `electron .` started from another npm script.
  const node = env[SERVICES_NODE_VARIABLE] || env.npm_node_execpath || 'node';
  return {
    kind: 'node-child',
    node,
    why: 'development: the services run with the Node.js that ran npm, which the checkout\u2019s better-sqlite3 was built for',
  };
}
