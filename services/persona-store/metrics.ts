import { METRIC_NAMES } from '../../common/activity.ts';
import type { Db, PersonaEngine } from './engines/engine.ts';
import type { ServiceMetrics } from '../kit/metrics.ts';
import { ACTIONS, type Action } from './change-log.ts';
import { PersonaSql } from './store.ts';
import type { LogEntry } from './tables.ts';

/** What a recall searched: one persona (`recall`) or every persona of the caller (`recall_all`). */
export const RECALL_SCOPES = ['persona', 'all'] as const;
export type RecallScope = (typeof RECALL_SCOPES)[number];

/**
 * The persona store's own counters at GET /metrics, by the names the console charts: writes by
 * change-log action, recalls by scope. Labels take only these declared values, so no profile, key,
 * query or content can become one.
 */
export interface PersonaCounters {
  /** A write committed these change-log entries (none for a retry that changed nothing). */
  wrote(actions: readonly Action[]): void;
  recalled(scope: RecallScope): void;
}

export function personaCounters(metrics: ServiceMetrics): PersonaCounters {
  const writes = metrics.counter({
    name: METRIC_NAMES.personaWrites,
    help: 'Writes that changed something, one per change-log entry they recorded, by its action (the sweeper\u2019s destructions are not writes).',
    labels: { action: ACTIONS },
  });
  const recalls = metrics.counter({
    name: METRIC_NAMES.personaRecalls,
    help: 'Recalls answered, by scope: one persona (recall) or all the caller\u2019s (recall_all).',
    labels: { scope: RECALL_SCOPES },
  });
  return {
    wrote: (actions) => {
      // Counted after the commit: an action the counter was not given must not turn a done write into a 500.
      for (const action of actions) if (ACTIONS.includes(action)) writes.inc({ action });
    },
    recalled: (scope) => recalls.inc({ scope }),
  };
}

/**
 * The store the operations write through, counting each write by the change-log entries it recorded,
 * once its transaction committed: the change log is where "this write changed something" is decided
 * (one entry per change, none for an identical retry), so the counters cannot disagree with it. A
 * transaction that fails counts nothing; one the engine runs again counts only its last run.
 */
export class CountedSql extends PersonaSql {
  constructor(
    engine: PersonaEngine,
    private readonly counters: PersonaCounters,
    db?: Db,
    /** The entries of the transaction this instance was made for. */
    private readonly recorded?: Action[],
  ) {
    super(engine, db);
  }

  override async transaction<T>(fn: (sql: PersonaSql) => Promise<T>): Promise<T> {
    const recorded: Action[] = [];
    const result = await this.engine.write((tx) => {
      recorded.length = 0;
      return fn(new CountedSql(this.engine, this.counters, tx, recorded));
    });
    this.counters.wrote(recorded);
    return result;
  }

  protected override wroteEntry(entry: LogEntry): void {
    this.recorded?.push(entry.action as Action);
  }
}
