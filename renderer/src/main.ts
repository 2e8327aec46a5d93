/** Entry of the console page: mounts the app into #app. */
import { html, render } from 'htm/preact';
import { App } from './app.ts';
import { takeLaunchSecret } from './transport.ts';

// Before the app reads the address (its tab lives in the fragment too).
takeLaunchSecret();
// A new launch's URL opened in this tab changes only the fragment, which loads nothing: start again with its secret.
window.addEventListener('hashchange', () => {
  if (window.consoleBridge || !new URLSearchParams(location.hash.slice(1)).has('secret')) return;
  takeLaunchSecret();
  location.reload();
});

const root = document.getElementById('app');
if (root) {
  root.textContent = '';
  render(html`<${App} />`, root);
}
