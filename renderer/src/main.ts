/** Entry of the console page: mounts the app into #app. */
import { html, render } from 'htm/preact';
import { App } from './app.ts';

const root = document.getElementById('app');
if (root) {
  root.textContent = '';
  render(html`<${App} />`, root);
}
