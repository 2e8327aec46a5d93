import type { Kysely } from 'kysely';
import { z } from 'zod';
import { FORGET_MODES, MAX_GRACE_PERIOD_SECONDS } from '../../common/change-log.ts';
import type { IdentityDatabase } from './tables.ts';

/**
 * A person's settings for the persona store, as identity keeps them per account: the settings service
 * the persona store reads (`GET /v1/settings/persona?account=`, its PERSONA_SETTINGS_API_*), written by
 * the person with their own credential (the console's Settings page). A member left out is not chosen:
 * the persona store's deployment configuration applies to it.
 */
export const PersonaSettings = z
  .object({
    forget_mode: z.enum(FORGET_MODES).optional().meta({
      description:
        'What forgetting a field or note does: keep (out of every answer, kept in the file), destroy_after_grace, destroy_now.',
    }),
    grace_period_seconds: z
      .number()
      .int()
      .min(1)
      .max(MAX_GRACE_PERIOD_SECONDS)
      .optional()
      .meta({ description: 'How long a forgotten entry waits before it is destroyed under destroy_after_grace.' }),
    keep_replaced_values: z
      .boolean()
      .optional()
      .meta({ description: 'Whether the change log keeps what each change replaced (before \u2192 after).' }),
  })
  .strict()
  .meta({
    id: 'PersonaSettings',
    description: 'Your own choices for the persona store; absent members are not chosen.',
  });
export type PersonaSettings = z.infer<typeof PersonaSettings>;

/** The one namespace kept today: the persona store's. */
const NAMESPACE = 'persona';

export class PersonSettings {
  constructor(private readonly db: Kysely<IdentityDatabase>) {}

  /** The account's choices; undefined when it chose nothing. */
  async get(accountId: string): Promise<PersonaSettings | undefined> {
    const row = await this.db
      .selectFrom('person_settings')
      .select('settings')
      .where('account_id', '=', accountId)
      .where('namespace', '=', NAMESPACE)
      .executeTakeFirst();
    if (!row) return undefined;
    const parsed = PersonaSettings.safeParse(JSON.parse(row.settings));
    return parsed.success ? parsed.data : undefined;
  }

  /** Replaces the account's choices with these; an empty object clears them (the deployment's configuration again). */
  async put(accountId: string, settings: PersonaSettings, now = new Date()): Promise<PersonaSettings> {
    if (Object.keys(settings).length === 0) {
      await this.db
        .deleteFrom('person_settings')
        .where('account_id', '=', accountId)
        .where('namespace', '=', NAMESPACE)
        .execute();
      return {};
    }
    const row = {
      account_id: accountId,
      namespace: NAMESPACE,
      settings: JSON.stringify(settings),
      updated_at: now.toISOString(),
    };
    await this.db
      .insertInto('person_settings')
      .values(row)
      .onConflict((oc) =>
        oc.columns(['account_id', 'namespace']).doUpdateSet({ settings: row.settings, updated_at: row.updated_at }),
      )
      .execute();
    return settings;
  }
}
