import { z } from 'zod';
import { MAX_GRACE_PERIOD_SECONDS } from '../../common/change-log.ts';
import { urlPath } from '../../common/url-path.ts';
import { problem } from '../kit/problem.ts';
import { FORGET_MODES, type ForgetMode, type PersonaConfig } from './config.ts';

/** What one person's requests obey: forgetting, change-log values, and caps they may have lowered. */
export interface Policy {
  forgetMode: ForgetMode;
  gracePeriodSeconds: number;
  keepReplacedValues: boolean;
  pageSize: number;
  /** The deployment's page size (PERSONA_PAGE_SIZE); pageSize is lower when the person lowered it. */
  deploymentPageSize: number;
  pinCapFields: number;
  pinCapNotes: number;
}

/**
 * The settings service's answer to `GET <base>/v1/settings/persona?account=<account>` (bearer
 * PERSONA_SETTINGS_API_TOKEN). Every member is optional; 404 means the person chose nothing.
 */
export const PersonSettings = z.object({
  forget_mode: z.enum(FORGET_MODES).optional(),
  grace_period_seconds: z.number().int().min(1).max(MAX_GRACE_PERIOD_SECONDS).optional(),
  keep_replaced_values: z.boolean().optional(),
  page_size: z.number().int().min(1).optional(),
  pin_cap_fields: z.number().int().min(0).optional(),
  pin_cap_notes: z.number().int().min(0).optional(),
});
export type PersonSettings = z.infer<typeof PersonSettings>;

export interface PolicySource {
  policyFor(account: string): Promise<Policy>;
}

export function deploymentPolicy(config: PersonaConfig): Policy {
  return {
    forgetMode: config.forgetMode,
    gracePeriodSeconds: config.gracePeriodSeconds,
    keepReplacedValues: config.keepReplacedValues,
    pageSize: config.pageSize,
    deploymentPageSize: config.pageSize,
    pinCapFields: config.pinCapFields,
    pinCapNotes: config.pinCapNotes,
  };
}

/** A person may lower a cap, never raise it. */
export function applyPersonSettings(base: Policy, s: PersonSettings): Policy {
  return {
    forgetMode: s.forget_mode ?? base.forgetMode,
    gracePeriodSeconds: s.grace_period_seconds ?? base.gracePeriodSeconds,
    keepReplacedValues: s.keep_replaced_values ?? base.keepReplacedValues,
    pageSize: Math.min(base.pageSize, s.page_size ?? base.pageSize),
    deploymentPageSize: base.deploymentPageSize,
    pinCapFields: Math.min(base.pinCapFields, s.pin_cap_fields ?? base.pinCapFields),
    pinCapNotes: Math.min(base.pinCapNotes, s.pin_cap_notes ?? base.pinCapNotes),
  };
}

export function createPolicySource(config: PersonaConfig): PolicySource {
  const base = deploymentPolicy(config);
  const baseUrl = config.settingsApiBaseUrl;
  const token = config.settingsApiToken;
  if (!baseUrl || !token) return { policyFor: async () => base };

  const unavailable = (why: string) =>
    problem.unavailable(
      `The settings service ${why}, so this person's forget mode and caps are unknown; nothing was done, so that no other policy than theirs is applied. ` +
        'Try again when the settings service answers.',
    );
  // The app's own settings service is identity: asked on the channel that proves it is identity (its socket),
  // never on whatever answers at its URL, since the question carries this store's token.
  const identity = config.identity.channel;
  const viaIdentity = sameOrigin(baseUrl, identity.url);
  const ask = async (account: string): Promise<{ status: number; body: unknown }> => {
    const path = `${urlPath`/v1/settings/persona`}?${new URLSearchParams({ account })}`;
    const headers = { authorization: `Bearer ${token}`, accept: 'application/json' };
    if (viaIdentity) {
      try {
        const answer = await identity.call({ path, headers, timeoutMs: config.settingsTimeoutMs });
        return { status: answer.status, body: answer.body };
      } catch {
        throw unavailable(`(the identity service, on ${identity.where}) could not be reached`);
      }
    }
    let res: Response;
    try {
      res = await fetch(`${baseUrl}${path}`, { headers, signal: AbortSignal.timeout(config.settingsTimeoutMs) });
    } catch {
      throw unavailable(`at ${baseUrl} could not be reached within ${config.settingsTimeoutMs} ms`);
    }
    if (!res.ok) {
      await res.body?.cancel();
      return { status: res.status, body: undefined };
    }
    try {
      return { status: res.status, body: await res.json() };
    } catch {
      throw unavailable('answered with something that is not JSON');
    }
  };
  return {
    async policyFor(account) {
      const answer = await ask(account);
      if (answer.status === 404) return base;
      if (answer.status !== 200) throw unavailable(`answered ${answer.status}`);
      const parsed = PersonSettings.safeParse(answer.body);
      if (!parsed.success) throw unavailable('answered with settings that do not have the expected shape');
      return applyPersonSettings(base, parsed.data);
    },
  };
}

/** Whether two URLs name the same scheme, host and port (the settings service is identity itself). */
function sameOrigin(a: string, b: string): boolean {
  try {
    return new URL(a).origin === new URL(b).origin;
  } catch {
    return false;
  }
}
