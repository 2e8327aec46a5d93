/**
 * A modal question before an action that cannot be taken back: the browser's own <dialog> (focus moves
 * into it and stays there, Escape cancels, focus returns to the button that opened it). The focus starts
 * on the element marked `data-safe` (the "Keep it" choice), so Enter never confirms by accident.
 */
import { html } from 'htm/preact';
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

export function Dialog(props: { id: string; title: string; children: ComponentChildren; onClose: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    const opener = document.activeElement as HTMLElement | null;
    if (dialog && !dialog.open) dialog.showModal();
    dialog?.querySelector<HTMLElement>('[data-safe]')?.focus();
    return () => {
      if (dialog?.open) dialog.close();
      // Back to the button that asked, unless what the action did took the focus meanwhile.
      const now = document.activeElement;
      if (!now || now === document.body || dialog?.contains(now)) opener?.focus?.();
    };
  }, []);
  return html`<dialog
    ref=${ref}
    class="dialog"
    aria-labelledby=${`${props.id}-title`}
    onCancel=${(e: Event) => (e.preventDefault(), props.onClose())}
  >
    <h2 id=${`${props.id}-title`}>${props.title}</h2>
    ${props.children}
  </dialog>`;
}
