// The console window's preload (sandboxed, so built to CommonJS and given only `electron`): one narrow
// function that carries a console API request over IPC. The page never sees ipcRenderer, Node or a token.
import { contextBridge, ipcRenderer } from 'electron';

contextBridge.exposeInMainWorld('consoleBridge', {
  call: (request: unknown) => ipcRenderer.invoke('console:call', request),
});
