/**
 * What a person's action did, in words: its own sentence when it worked, the console's message (which
 * says what to do) when it did not. The pages that act keep one outcome each and show it under the action.
 */
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { Failed } from './states.ts';

export type Outcome = { kind: 'ok' | 'error'; text: string } | undefined;

/** The last action's outcome, and `attempt`, which runs an action and keeps how it went (nothing to say: no outcome). */
export function useOutcome() {
  const [outcome, setOutcome] = useState<Outcome>();
  const attempt = async (action: () => Promise<string | undefined>) => {
    try {
      const said = await action();
      setOutcome(said === undefined ? undefined : { kind: 'ok', text: said });
    } catch (err) {
      setOutcome({ kind: 'error', text: (err as Error).message });
    }
  };
  return { outcome, setOutcome, attempt };
}

export function OutcomeLine({ said }: { said: Outcome }) {
  if (!said) return null;
  return said.kind === 'ok'
    ? html`<p class="state ok" role="status">${said.text}</p>`
    : html`<${Failed} message=${said.text} />`;
}

/**
 * The answer to an action where the action is (beside its button, in its row): a live region that is
 * always in place, so screen readers hear what appears in it, and the row above it never moves.
 */
export function ActionAnswer({ said }: { said: Outcome }) {
  return html`<span class="action-answer" role="status" aria-live="polite"
    >${said ? html`<span class=${`said ${said.kind}`}>${said.text}</span>` : null}</span
  >`;
}
