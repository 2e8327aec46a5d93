/**
 * The service catalogue against what each service does with it (its config's prefix, default port and
 * data folder, the settings the supervisor wires, identity's URL and audiences, the gateway's refused
 * ports), the needs, the hub page's variables, the tray's rule and the persona store's change-log words. The layering (this folder imports nothing, the renderer only this folder) is the
 * lint rule's, tested by test/import-lanes.test.ts.
 */
import { existsSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError, type Setting } from '../services/kit/config.ts';
import { identitySettings, loadIdentityConfig } from '../services/identity/config.ts';
import { loadModelProviderConfig, modelProviderSettings } from '../services/model-provider/config.ts';
import { ACTIONS } from '../services/persona-store/change-log.ts';
import {
  FORGET_MODES as STORE_FORGET_MODES,
  loadPersonaConfig,
  PERSONA_AUDIENCE,
} from '../services/persona-store/config.ts';
import { REPOHOST_AUDIENCE, loadRepohostConfig, repohostSettings } from '../services/repohost-gateway/config.ts';
import { personaSettings } from '../services/persona-store/config.ts';
import { CHANGE_ACTIONS, DEFAULT_FORGET_MODE, DEFAULT_GRACE_PERIOD_SECONDS, FORGET_MODES } from './change-log.ts';
import { serviceNeed } from './needs.ts';
import {
  dependsOn,
  SERVICE_CATALOGUE,
  SERVICE_NAMES,
  SERVICE_PORTS,
  SERVICES,
  TOKEN_AUDIENCES,
  type ServiceName,
} from './services.ts';
import { aggregateState, SERVICE_STATES, STATE_ADVICE } from './states.ts';
import { aggregateState as trayAggregate } from '../main/electron/tray-menu.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..');

/** Each service's own loader, called with an empty environment: its defaults. */
const LOADERS: Record<ServiceName, (env: NodeJS.ProcessEnv) => { port: number; dataDir: string }> = {
  identity: loadIdentityConfig,
  'persona-store': loadPersonaConfig,
  'repohost-gateway': loadRepohostConfig,
  'model-provider': loadModelProviderConfig,
};

/** The settings each service reads (without its prefix). */
const SETTINGS: Record<ServiceName, Record<string, Setting<unknown>>> = {
  identity: identitySettings,
  'persona-store': personaSettings,
  'repohost-gateway': repohostSettings,
  'model-provider': modelProviderSettings,
};

describe('each service takes its facts from the catalogue', () => {
  it('names the four programs of services/, in the supervisor\u2019s order', () => {
    for (const name of SERVICE_NAMES) {
      expect(SERVICE_CATALOGUE[name].name).toBe(name);
      expect(existsSync(join(ROOT, 'services', name, 'main.ts'))).toBe(true);
    }
    expect(SERVICES.map((s) => s.name)).toEqual([...SERVICE_NAMES]);
  });

  it.each(SERVICE_NAMES)('%s: default port and data folder from its own config', (name) => {
    const config = LOADERS[name]({});
    expect(config.port).toBe(SERVICE_CATALOGUE[name].port);
    expect(basename(config.dataDir)).toBe(name);
  });

  it.each(SERVICE_NAMES)('%s: its config reads exactly the catalogue\u2019s prefix', (name) => {
    const { prefix } = SERVICE_CATALOGUE[name];
    // An unknown variable with the service's prefix stops its start, naming it: proof of the prefix it reads.
    expect(() => LOADERS[name]({ [`${prefix}NO_SUCH_SETTING`]: 'x' })).toThrow(ConfigError);
    expect(() => LOADERS[name]({ [`${prefix}NO_SUCH_SETTING`]: 'x' })).toThrow(`${prefix}NO_SUCH_SETTING`);
    // Another service's prefix is none of its business.
    const other = SERVICES.find((s) => s.name !== name)!;
    expect(() => LOADERS[name]({ [`${other.prefix}NO_SUCH_SETTING`]: 'x' })).not.toThrow();
  });

  it.each(SERVICE_NAMES)('%s: reads every setting the supervisor wires for it', (name) => {
    const names = Object.values(SETTINGS[name]).map((s) => s.name);
    for (const wired of SERVICE_CATALOGUE[name].wired) expect(names, wired).toContain(wired);
  });

  it('a service that verifies tokens finds identity at identity’s port by default, and checks its own audience', () => {
    const identityUrl = `http://127.0.0.1:${SERVICE_CATALOGUE.identity.port}`;
    expect(loadPersonaConfig({}).identityUrl).toBe(identityUrl);
    expect(loadRepohostConfig({}).identityUrl).toBe(identityUrl);
    expect(PERSONA_AUDIENCE).toBe(SERVICE_CATALOGUE['persona-store'].audience);
    expect(REPOHOST_AUDIENCE).toBe(SERVICE_CATALOGUE['repohost-gateway'].audience);
  });

  it('the services that verify identity\u2019s tokens are the ones that depend on it: a taken port of identity keeps them unstarted', () => {
    const trusting = SERVICE_NAMES.filter((n) => dependsOn(n).includes('identity'));
    expect(trusting).toEqual(['persona-store', 'repohost-gateway']);
    expect(loadPersonaConfig({}).identityUrl).toBeDefined();
    expect(loadRepohostConfig({}).identityUrl).toBeDefined();
    expect(dependsOn('identity')).toEqual([]);
    expect(dependsOn('model-provider')).toEqual([]);
  });

  it('identity mints for every audience by default; the gateway refuses every service’s port; the store forgets by the shared defaults', () => {
    expect(TOKEN_AUDIENCES).toEqual(['persona', 'repohost-api']);
    expect(loadIdentityConfig({}).hubAudiences).toEqual(TOKEN_AUDIENCES);
    expect(loadRepohostConfig({}).signalRefusedPorts).toEqual([...SERVICE_PORTS]);
    expect(SERVICE_PORTS).toHaveLength(SERVICES.length);
    const store = loadPersonaConfig({});
    expect([store.forgetMode, store.gracePeriodSeconds]).toEqual([DEFAULT_FORGET_MODE, DEFAULT_GRACE_PERIOD_SECONDS]);
  });

  it('a caller presents a token exactly to the services with an audience; identity takes the session credential, the provider nothing', () => {
    for (const s of SERVICES) expect(s.credential === 'token', s.name).toBe(s.audience !== null);
    expect(SERVICE_CATALOGUE.identity.credential).toBe('session-credential');
    expect(SERVICE_CATALOGUE['model-provider'].credential).toBe('none');
  });

  it.each(SERVICE_NAMES)('%s: every check it waits on has a need in words', (name) => {
    for (const check of SERVICE_CATALOGUE[name].waitsOn) {
      expect(serviceNeed({ name, state: 'waiting', waitingOn: [check] }), check).toMatchObject({ service: name });
    }
  });

  it('the hub page gives each service its base URL, and its audience exactly when it checks tokens, under distinct HUB_ names', () => {
    const variables = SERVICES.flatMap((s) => s.hubVariables.map(([variable]) => variable));
    expect(new Set(variables).size).toBe(variables.length);
    for (const s of SERVICES) {
      const holds = s.hubVariables.map(([, h]) => h);
      expect(
        holds.filter((h) => h === 'base-url'),
        s.name,
      ).toHaveLength(1);
      expect(holds.includes('audience'), s.name).toBe(s.audience !== null);
      expect(holds.includes('session-credential'), s.name).toBe(s.credential === 'session-credential');
      for (const [variable] of s.hubVariables) expect(variable).toMatch(/^HUB_[A-Z_]+$/);
    }
  });

  it('has advice for every state', () => {
    expect(Object.keys(STATE_ADVICE).sort()).toEqual([...SERVICE_STATES].sort());
  });

  it('the tray icon\u2019s state is the tray\u2019s own rule, for every mix of four states', () => {
    for (const a of SERVICE_STATES)
      for (const b of SERVICE_STATES)
        for (const c of SERVICE_STATES)
          for (const d of SERVICE_STATES) {
            const states = [a, b, c, d];
            expect(aggregateState(states)).toBe(
              trayAggregate(
                states.map((state, i) => ({ name: SERVICE_NAMES[i]!, state, port: 1, url: '', restarts: 0 })),
              ),
            );
          }
  });

  it('the persona store logs the shared change-log actions and forget modes (the same lists, not copies)', () => {
    expect(ACTIONS).toBe(CHANGE_ACTIONS);
    expect(STORE_FORGET_MODES).toBe(FORGET_MODES);
  });

  it('the words are distinct and read as a person would', () => {
    expect(new Set(SERVICES.map((s) => s.title)).size).toBe(4);
    expect(new Set(SERVICES.map((s) => s.port)).size).toBe(4);
    expect(new Set(SERVICES.map((s) => s.prefix)).size).toBe(4);
    for (const s of SERVICES) {
      expect(s.label).toBe(s.label.toLowerCase());
      expect(s.prefix).toMatch(/^[A-Z]+_$/);
    }
  });
});
