/** A Copy button for a command, a block of settings or log lines, with what it did beside it. */
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';

/** Copies with the Clipboard API where the page may (loopback is a secure context), else selects the text for Ctrl-C. */
export function CopyButton({ text, target, label }: { text: string; target: string; label: string }) {
  const [said, setSaid] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setSaid('Copied.');
    } catch {
      const pre = document.getElementById(target);
      if (pre) window.getSelection()?.selectAllChildren(pre);
      setSaid('Selected: press Ctrl-C (⌘-C) to copy.');
    }
  };
  return html`<button type="button" onClick=${copy} aria-label=${label}>Copy</button
    ><span class="muted copy-said" role="status">${said}</span>`;
}
