/**
 * The service catalogue against what each service itself declares (its config's prefix, default port
 * and data folder, its audience, identity's session file), the tray's rule and the persona store's
 * change-log actions. The layering (this folder imports nothing, the renderer only this folder) is the
 * lint rule's, tested by test/import-lanes.test.ts.
 */
import { existsSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../services/kit/config.ts';
import { IDENTITY_PORT, loadIdentityConfig } from '../services/identity/config.ts';
import { loadModelProviderConfig, MODEL_PROVIDER_PORT, STREAM_MODES } from '../services/model-provider/config.ts';
import { PROVIDER_STREAM_MODES } from './contract.ts';
import { ACTIONS } from '../services/persona-store/change-log.ts';
import { FORGET_MODES as STORE_FORGET_MODES, loadPersonaConfig, PERSONA_AUDIENCE, PERSONA_PORT } from '../services/persona-store/config.ts';
import { AUDIENCE as REPOHOST_AUDIENCE, loadRepohostConfig, REPOHOST_PORT } from '../services/repohost-gateway/config.ts';
import { CHANGE_ACTIONS, FORGET_MODES } from './change-log.ts';
import { SERVICE_CATALOGUE, SERVICE_NAMES, SERVICES, type ServiceName } from './services.ts';
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

describe('the service catalogue says what each service says of itself', () => {
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

  it('the port constants and audiences the services export', () => {
    expect(SERVICE_CATALOGUE.identity.port).toBe(IDENTITY_PORT);
    expect(SERVICE_CATALOGUE['persona-store'].port).toBe(PERSONA_PORT);
    expect(SERVICE_CATALOGUE['repohost-gateway'].port).toBe(REPOHOST_PORT);
    expect(SERVICE_CATALOGUE['model-provider'].port).toBe(MODEL_PROVIDER_PORT);
    expect(SERVICE_CATALOGUE['persona-store'].audience).toBe(PERSONA_AUDIENCE);
    expect(SERVICE_CATALOGUE['repohost-gateway'].audience).toBe(REPOHOST_AUDIENCE);
    // Identity checks session credentials, the provider nothing: neither verifies a token for an audience.
    expect(SERVICE_CATALOGUE.identity.audience).toBeNull();
    expect(SERVICE_CATALOGUE['model-provider'].audience).toBeNull();
  });

  it('has advice for every state', () => {
    expect(Object.keys(STATE_ADVICE).sort()).toEqual([...SERVICE_STATES].sort());
  });

  it('the tray icon\u2019s state is the tray\u2019s own rule, for every mix of four states', () => {
    for (const a of SERVICE_STATES) for (const b of SERVICE_STATES) for (const c of SERVICE_STATES) for (const d of SERVICE_STATES) {
      const states = [a, b, c, d];
      expect(aggregateState(states)).toBe(trayAggregate(states.map((state, i) => ({ name: SERVICE_NAMES[i]!, state, port: 1, url: '', restarts: 0 }))));
    }
  });

  it('the persona store logs the shared change-log actions (the same list, not a copy), and its forget modes are these', () => {
    expect(ACTIONS).toBe(CHANGE_ACTIONS);
    expect(FORGET_MODES).toEqual(STORE_FORGET_MODES);
  });

  it('the console offers exactly the provider\u2019s stream modes', () => {
    expect(PROVIDER_STREAM_MODES).toEqual(STREAM_MODES);
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
