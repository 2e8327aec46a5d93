import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  commonSettings,
  identityUrlSetting,
  integerSetting,
  loadConfig,
  parse,
  setting,
} from './config.ts';

const settings = {
  ...commonSettings({ name: 'demo', port: 8123 }, { fallback: '64kb' }),
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
    const c = loadConfig('DEMO_', settings, {
      DEMO_PORT: '9000',
      DEMO_LIMIT: '5',
      DEMO_TOKEN: 't',
      OTHER_THING: 'ignored',
    });
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

  it('takes a body limit in bytes or with a unit, and refuses another with the variable named', () => {
    expect(loadConfig('DEMO_', settings, {}).bodyLimit).toBe('64kb');
    for (const size of ['2mb', '1.5MB', '1048576', '512 kb'])
      expect(loadConfig('DEMO_', settings, { DEMO_BODY_LIMIT: size }).bodyLimit).toBe(size);
    for (const size of ['lots', '-1kb', '2 megabytes', '1e6', '1.5'])
      expect(() => loadConfig('DEMO_', settings, { DEMO_BODY_LIMIT: size }), size).toThrow(
        /DEMO_BODY_LIMIT is not valid \(must be a size such as 64kb, 2mb or 1048576\)/,
      );
  });

  it('refuses to listen beyond loopback', () => {
    expect(() => loadConfig('DEMO_', settings, { DEMO_HOST: '0.0.0.0' })).toThrow(/loopback/);
    expect(loadConfig('DEMO_', settings, { DEMO_HOST: '::1' }).host).toBe('::1');
    expect(loadConfig('DEMO_', settings, { DEMO_HOST: 'localhost' }).host).toBe('localhost');
  });

  it('takes one of a fixed set of words, and refuses another by listing them', () => {
    const modes = { mode: setting('MODE', parse.oneOf(['whole', 'deltas']), 'whole', 'How to send.') };
    expect(loadConfig('DEMO_', modes, {}).mode).toBe('whole');
    expect(loadConfig('DEMO_', modes, { DEMO_MODE: 'deltas' }).mode).toBe('deltas');
    expect(() => loadConfig('DEMO_', modes, { DEMO_MODE: 'Whole' })).toThrow(
      'Setting DEMO_MODE is not valid (must be one of whole, deltas). How to send.',
    );
  });

  it('reads a list item by item, naming each item it refuses', () => {
    const ports = { ports: setting('PORTS', parse.ports(), '1,65535', 'Ports.') };
    expect(loadConfig('DEMO_', ports, {}).ports).toEqual([1, 65535]);
    expect(loadConfig('DEMO_', ports, { DEMO_PORTS: ' 80 , 443,' }).ports).toEqual([80, 443]);
    for (const bad of ['80,eighty', '0', '65536', '8080x', '-1']) {
      expect(() => loadConfig('DEMO_', ports, { DEMO_PORTS: bad }), bad).toThrow(
        /DEMO_PORTS.*is not a port \(1-65535\)/,
      );
    }
    const even = {
      even: setting(
        'EVEN',
        parse.listOf((t) => (Number(t) % 2 === 0 ? Number(t) : `${t} is odd`)),
        '',
        'Even numbers.',
      ),
    };
    expect(() => loadConfig('DEMO_', even, { DEMO_EVEN: '2,3,5' })).toThrow(/3 is odd; 5 is odd/);
  });

  it('reads key=value pairs into a map, refusing a malformed pair or a key named twice without echoing either', () => {
    const pairs = {
      pairs: setting('PAIRS', parse.pairs(/^[a-z]+=\S{4,}$/, 'must be name=secret pairs', 'a name'), '', 'Pairs.'),
    };
    expect(loadConfig('DEMO_', pairs, {}).pairs).toEqual(new Map());
    expect(loadConfig('DEMO_', pairs, { DEMO_PAIRS: 'a=abcd, b=ef=gh' }).pairs).toEqual(
      new Map([
        ['a', 'abcd'],
        ['b', 'ef=gh'],
      ]),
    );
    expect(() => loadConfig('DEMO_', pairs, { DEMO_PAIRS: 'a=abc' })).toThrow(
      /DEMO_PAIRS is not valid \(must be name=secret pairs\)/,
    );
    expect(() => loadConfig('DEMO_', pairs, { DEMO_PAIRS: 'a=abcd,a=wxyz' })).toThrow(/names a name twice/);
    expect(() => loadConfig('DEMO_', pairs, { DEMO_PAIRS: 'a=abcd,a=wxyz' })).not.toThrow(/abcd|wxyz/);
  });

  it('points IDENTITY_URL at identity on this machine, at the port it is given', () => {
    const c = loadConfig('DEMO_', { identityUrl: identityUrlSetting(8999, 'Identity.') }, {});
    expect(c.identityUrl).toBe('http://127.0.0.1:8999');
    expect(
      loadConfig(
        'DEMO_',
        { identityUrl: identityUrlSetting(8999, 'Identity.') },
        { DEMO_IDENTITY_URL: 'http://[::1]:7000/' },
      ).identityUrl,
    ).toBe('http://[::1]:7000');
  });

  it('says a whole-number setting’s range and default in its help, from the same numbers that bound it', () => {
    const limits = { slots: integerSetting('SLOTS', { min: 1, max: 16, fallback: 2 }, 'Runs at once.') };
    expect(loadConfig('DEMO_', limits, {}).slots).toBe(2);
    expect(loadConfig('DEMO_', limits, { DEMO_SLOTS: '16' }).slots).toBe(16);
    for (const bad of ['0', '17', '2.5', 'two']) {
      expect(() => loadConfig('DEMO_', limits, { DEMO_SLOTS: bad }), bad).toThrow(
        'Runs at once. A whole number 1-16; default 2.',
      );
    }
  });
});
