/** Entry of the console page: mounts the app into #app. */
import { html, render } from 'htm/preact';
import { App } from './app.ts';
import { takeLaunchSecret } from './transport.ts';

// Before the app reads the address (its tab lives in the fragment too).
takeLaunchSecret();

const root = document.getElementById('app');
if (root) {
  root.textContent = '';
  render(html`<${App} />`, root);
}
