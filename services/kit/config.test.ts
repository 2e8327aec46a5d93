import { describe, expect, it } from 'vitest';
import { ConfigError, commonSettings, loadConfig, parse, setting } from './config.ts';

const settings = {
  ...commonSettings('demo', 8123),
  limit: setting('LIMIT', parse.integer(1, 100), '20', 'Page size, 1-100.'),
  token: setting('TOKEN', parse.text(), undefined, 'Optional token.'),
};

describe('configuration from prefixed environment variables', () => {
  it('gives the defaults when nothing is set', () => {
    const c = loadConfig('DEMO_', settings, {});
    expect(c.host).toBe('127.0.0.1');
    expect(c.port).toBe(8123);
    expect(c.limit).toBe(20);
    expect(c.token).toBeUndefined();
    expect(c.dataDir).toMatch(/hub-services[\\/]demo$/);
  });

  it('parses what is set', () => {
    const c = loadConfig('DEMO_', settings, { DEMO_PORT: '9000', DEMO_LIMIT: '5', DEMO_TOKEN: 't', OTHER_THING: 'ignored' });
    expect([c.port, c.limit, c.token]).toEqual([9000, 5, 't']);
  });

  it('stops startup on an unknown prefixed name and names it', () => {
    expect(() => loadConfig('DEMO_', settings, { DEMO_PROT: '9000' })).toThrow(ConfigError);
    expect(() => loadConfig('DEMO_', settings, { DEMO_PROT: '9000' })).toThrow(/DEMO_PROT/);
  });

  it('names the variable whose value does not parse, without echoing the value', () => {
    let message = '';
    try {
      loadConfig('DEMO_', settings, { DEMO_LIMIT: 'secretish-value' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/DEMO_LIMIT/);
    expect(message).not.toMatch(/secretish-value/);
  });

  it('refuses to listen beyond loopback', () => {
    expect(() => loadConfig('DEMO_', settings, { DEMO_HOST: '0.0.0.0' })).toThrow(/loopback/);
    expect(loadConfig('DEMO_', settings, { DEMO_HOST: '::1' }).host).toBe('::1');
    expect(loadConfig('DEMO_', settings, { DEMO_HOST: 'localhost' }).host).toBe('localhost');
  });
});
