/**
 * A service's actions (start, stop, restart, its log), the same on the overview's cards and the
 * Services page's table: one action at a time, its failure said in words, the view read again after.
 */
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import type { ServiceView } from '../../common/contract.ts';
import { SERVICE_CATALOGUE, type ServiceName } from '../../common/services.ts';
import { RUNNING_STATES as RUNNING } from '../../common/states.ts';
import { call } from './transport.ts';

export type ServiceVerb = 'start' | 'stop' | 'restart' | 'startAll' | 'stopAll';

export interface ServiceControl {
  busy: string | undefined;
  failure: string | undefined;
  act: (verb: ServiceVerb, name?: ServiceName) => Promise<void>;
}

export function useServiceControl(reload: () => void): ServiceControl {
  const [busy, setBusy] = useState<string | undefined>();
  const [failure, setFailure] = useState<string | undefined>();
  const act = async (verb: ServiceVerb, name?: ServiceName) => {
    setBusy(name ? `${verb}:${name}` : verb);
    setFailure(undefined);
    try {
      await call(`services.${verb}`, name ? { name } : undefined);
    } catch (err) {
      setFailure((err as Error).message);
    } finally {
      setBusy(undefined);
      reload();
    }
  };
  return { busy, failure, act };
}

/** A service's own verbs, their button's word, and whether each may be asked of it as it runs or not. */
const ONE_SERVICE_VERBS: [ServiceVerb, string, (running: boolean) => boolean][] = [
  ['start', 'Start', (running) => !running],
  ['stop', 'Stop', (running) => running],
  ['restart', 'Restart', () => true],
];

export function ServiceActions({
  service,
  control,
  showLog,
}: {
  service: ServiceView;
  control: ServiceControl;
  showLog: (name: ServiceName) => void;
}) {
  const { busy, act } = control;
  const running = RUNNING.has(service.state);
  const title = SERVICE_CATALOGUE[service.name]?.title ?? service.name;
  return html`<div class="service-actions">
    ${ONE_SERVICE_VERBS.map(
      ([verb, label, allowed]) =>
        html`<button
          key=${verb}
          type="button"
          disabled=${busy !== undefined || !allowed(running)}
          onClick=${() => act(verb, service.name)}
          aria-label=${`${label} ${title}`}
        >
          ${label}
        </button>`,
    )}
    <button type="button" onClick=${() => showLog(service.name)} aria-label=${`Logs of ${title}`}>Logs</button>
  </div>`;
}
