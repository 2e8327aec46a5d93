/**
 * What the supervisor answers a service's callers while no process of it serves its port (held-port.ts):
 * 503 in the service's own envelope, saying why and how to start it, and nothing more (no cause, no log).
 */
import type { PortTaken } from '../../common/contract.ts';
import type { ServiceName } from '../../common/services.ts';
import type { ServiceState } from '../../common/states.ts';
import { providerEnvelope } from '../../services/model-provider/errors.ts';
import { earlyProblem } from '../../services/kit/problem.ts';
import type { EarlyAnswer } from '../../services/kit/shell.ts';
import type { StandInAnswer } from './held-port.ts';
import { capitalised, serviceLabel } from './ports.ts';

/** How each service's callers are answered while no process of it serves its port: its own error envelope. */
export const STAND_IN_ENVELOPES: Readonly<Record<ServiceName, EarlyAnswer>> = {
  identity: earlyProblem,
  'persona-store': earlyProblem,
  'repohost-gateway': earlyProblem,
  'model-provider': (status, detail) => providerEnvelope.early(status, detail),
};

/** How a person starts a stopped service again, for the answers given in its place. */
const HOW_TO_START =
  'Start it on the console\u2019s Services page or from the tray menu, or restart the app (`npm run serve` when it runs without a window).';

/** What the answer depends on: the service's state, when it restarts, whether it ever ran, and a port that kept it from starting. */
export interface StandInFacts {
  state: ServiceState;
  restartAt?: number;
  everStarted: boolean;
  notStartedFor?: PortTaken;
}

export function standInAnswer(name: ServiceName, slot: StandInFacts): StandInAnswer {
  const it = capitalised(serviceLabel(name));
  switch (slot.state) {
    case 'backing-off':
    case 'crashed': {
      const seconds = Math.max(1, Math.ceil(((slot.restartAt ?? Date.now()) - Date.now()) / 1000));
      return {
        detail: `${it} stopped unexpectedly and this app restarts it in ${seconds} s; try again then.`,
        retryAfterSeconds: seconds,
      };
    }
    case 'gave-up':
      return {
        detail: slot.notStartedFor
          ? // Its own port taken is not answered here (the supervisor does not hold it): the port of one it trusts was.
            `${it} is not running: this app did not start it because the port of ${serviceLabel(slot.notStartedFor.service)}, which it trusts, was held by another program when it was to start. The app says what to do on the console\u2019s overview.`
          : `${it} is not running: this app stopped restarting it after it failed repeatedly or could not start (its log in the console says why). ${HOW_TO_START}`,
      };
    case 'stopping':
      return { detail: `${it} is stopping, as asked in this app. ${HOW_TO_START}` };
    case 'stopped':
      return {
        detail: slot.everStarted
          ? `${it} was stopped in this app (its console or tray menu). ${HOW_TO_START}`
          : `${it} has not been started in this app. ${HOW_TO_START}`,
      };
    default:
      return { detail: `${it} is starting; try again in a moment.`, retryAfterSeconds: 1 };
  }
}
