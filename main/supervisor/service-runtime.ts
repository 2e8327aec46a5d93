/**
 * Which process runs the services (better-sqlite3 is a Node-API module, so its one binary loads in any
 * of them):
 * - headless (`npm run serve`): Node children of this Node;
 * - the desktop app in development (`npm start`, not packaged): Node children of the Node that ran npm
 *   (start.ts names it in HUB_SERVICES_NODE), the Node.js of `engines` that `npm run serve` and the
 *   tests use, which can also run a service from source through tsx when its bundle is stale;
 * - the installed app (`app.isPackaged`): Electron utility processes, running the bundles it carries,
 *   with no Node.js of its own to rely on.
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
      why: 'headless: the services run with this Node.js',
    };
  if (where.electronApp.isPackaged) {
    return {
      kind: 'utility-process',
      why: 'installed app: the services run in Electron utility processes',
    };
  }
  // npm names its own Node to scripts too, for an `electron .` started from another npm script.
  const node = env[SERVICES_NODE_VARIABLE] || env.npm_node_execpath || 'node';
  return {
    kind: 'node-child',
    node,
    why: 'development: the services run with the Node.js that ran npm, as `npm run serve` and the tests do',
  };
}
