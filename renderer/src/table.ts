/** A table's column heads, as one row of words; a last column of buttons is named for screen readers only. */
import { html } from 'htm/preact';

export function ColumnHeads({ names, hidden }: { names: string[]; hidden?: string }) {
  return html`<thead>
    <tr>
      ${names.map((n) => html`<th key=${n}>${n}</th>`)}
      ${hidden ? html`<th><span class="visually-hidden">${hidden}</span></th>` : null}
    </tr>
  </thead>`;
}
