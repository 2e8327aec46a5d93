/**
 * The last crash of each service, remembered from the supervisor's status events. The supervisor moves a
 * crashed service to `backing-off` in the same tick, and clears its error once it is ready again, so a
 * console that polls would never see the crash; this keeps it for the services panel.
 */
import type { ServiceName, ServiceStatus, Supervisor } from '../supervisor/types.ts';
import type { LastCrash } from '../../common/contract.ts';

export interface CrashMemory {
  lastCrash(name: ServiceName): LastCrash | undefined;
}

export function rememberCrashes(supervisor: Pick<Supervisor, 'on'>, now: () => number = Date.now): CrashMemory {
  const crashes = new Map<ServiceName, LastCrash>();
  supervisor.on('status', (status: ServiceStatus) => {
    if (status.state === 'crashed') {
      crashes.set(status.name, {
        at: new Date(now()).toISOString(),
        reason: status.lastError ?? 'it exited unexpectedly',
      });
      return;
    }
    const crash = crashes.get(status.name);
    if (crash && status.state === 'backing-off' && status.restartAt) crash.restartAt = status.restartAt;
  });
  return { lastCrash: (name) => crashes.get(name) };
}
