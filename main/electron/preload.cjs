// The console window's preload (sandboxed, so CommonJS and only `electron`): one narrow function that
// carries a console API request over IPC. The page never sees ipcRenderer, Node or a token.
/* global require */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { contextBridge, ipcRenderer } = require('electron');

contextBridge.exposeInMainWorld('consoleBridge', {
  call: (request) => ipcRenderer.invoke('console:call', request),
});
