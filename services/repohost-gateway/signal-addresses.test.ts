import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { propertyOptions, reportSeedOnFailure } from '../../test/support/seed.ts';
import { loadRepohostConfig } from './config.ts';
import { parseSignalPrefix, SignalAddresses, type SignalPrefix } from './signal-addresses.ts';

reportSeedOnFailure();

const prefixes = (...texts: string[]) =>
  texts.map((t) => {
    const p = parseSignalPrefix(t);
    if (typeof p === 'string') throw new Error(p);
    return p as SignalPrefix;
  });

/** The defaults: loopback on any port, the app's own four ports (and here the gateway's 8011) refused. */
const loopback = new SignalAddresses(
  loadRepohostConfig({}).signalUrlPrefixes,
  loadRepohostConfig({}).signalRefusedPorts,
);
/** An installation that allows one receiver path on one host. */
const hub = new SignalAddresses(
  prefixes('https://hooks.example.com/hub', 'http://127.0.0.1:9000/hooks'),
  [8001, 8004, 8011, 8127],
);

describe('signal addresses are parsed, never compared as strings', () => {
  const refusedByLoopback: [string, RegExp][] = [
    // User information in front of another host, and every spelling of it.
    ['http://127.0.0.1:@evil.example/', /user information/],
    ['http://127.0.0.1@evil.example/', /user information/],
    ['http://localhost:9000@evil.example/', /user information/],
    ['http://user:pass@127.0.0.1:9000/', /user information/],
    ['http://:@127.0.0.1:9000/', /user information/],
    ['http://%31%32%37.0.0.1@evil.example/', /user information/],
    ['http://[::1]@evil.example/', /user information/],
    // Other hosts that merely start like an allowed one.
    ['http://127.0.0.1.evil.example/', /allowed prefix/],
    ['http://localhostile/hook', /allowed prefix/],
    ['http://localhost./hook', /allowed prefix/],
    ['http://127.0.0.2:9000/', /allowed prefix/],
    ['http://[::ffff:127.0.0.1]:9000/', /allowed prefix/],
    ['http://[::2]:9000/', /allowed prefix/],
    ['https://127.0.0.1:9000/', /allowed prefix/],
    // This app's own services, on any spelling of loopback.
    ['http://127.0.0.1:8001/v1/connections/work', /own services/],
    ['http://localhost:8004/', /own services/],
    ['http://[::1]:8127/v1/chat/completions', /own services/],
    ['http://0x7f.1:8011/', /own services/],
    ['http://2130706433:8004/', /own services/],
    ['http://127.1:8001/', /own services/],
    ['http://127%2E0%2E0%2E1:8001/', /own services/],
    ['http://[0:0:0:0:0:0:0:1]:8001/', /own services/],
    ['http://127.0.0.1.:8001/', /own services/],
    ['http://LOCALHOST:08001/', /own services/],
    // Other schemes, fragments, odd characters.
    ['file:///etc/passwd', /http/],
    ['ftp://127.0.0.1:9000/', /http/],
    ['http:127.0.0.1:9000/hook', /http/],
    ['http://127.0.0.1:9000/hook#frag', /fragment/],
    ['http://127.0.0.1:9000\\@evil.example/', /backslash/],
    ['http://127.0.0.1:9000/ho ok', /spaces/],
    ['http://127.0.0.1:9000/\thook', /spaces/],
    ['http://127.0.0.1:9000/hooks%2F..%2Fadmin', /encode/],
    ['http://127.0.0.1:99999/', /absolute/],
    ['http://127.0.0.1:0/', /port from 1/],
    ['not a url', /spaces/],
  ];

  for (const [url, why] of refusedByLoopback) {
    it(`refuses ${JSON.stringify(url)} with the default prefixes`, () => {
      expect(loopback.refusal(url)).toMatch(why);
    });
  }

  const admittedByLoopback = [
    'http://127.0.0.1:9000/hook',
    'http://localhost:3000/',
    'http://[::1]:45678/signals?hub=1',
    // The same host however it is spelled: the parser sends it to 127.0.0.1, and the check sees what it sends to.
    'http://0x7f.1:9000/hook',
    'http://2130706433:9000/hook',
    'http://127.0.0.1./hook',
    'HTTP://LOCALHOST:9000/hook',
    'http://127.0.0.1/hook',
  ];
  for (const url of admittedByLoopback) {
    it(`admits ${JSON.stringify(url)} with the default prefixes`, () => {
      expect(loopback.refusal(url)).toBeUndefined();
    });
  }

  const table: [string, string | undefined][] = [
    ['https://hooks.example.com/hub', undefined],
    ['https://hooks.example.com/hub/', undefined],
    ['https://hooks.example.com/hub/signals?x=1', undefined],
    ['https://hooks.example.com:443/hub/a', undefined],
    ['https://HOOKS.example.COM/hub/a', undefined],
    ['https://hooks.example.com/hub-evil', 'allowed prefix'],
    ['https://hooks.example.com/hubx/a', 'allowed prefix'],
    ['https://hooks.example.com/Hub/a', 'allowed prefix'],
    ['https://hooks.example.com/', 'allowed prefix'],
    ['https://hooks.example.com/hub/../admin', 'allowed prefix'],
    ['https://hooks.example.com/hub/%2e%2e/admin', 'allowed prefix'],
    ['https://hooks.example.com:8443/hub/a', 'allowed prefix'],
    ['http://hooks.example.com/hub/a', 'allowed prefix'],
    ['https://hooks.example.com./hub/a', 'allowed prefix'],
    ['https://hooks.example.com.evil.example/hub/a', 'allowed prefix'],
    ['https://hooks.example.com@evil.example/hub/a', 'user information'],
    ['http://127.0.0.1:9000/hooks/x', undefined],
    ['http://127.0.0.1:9000/hooks', undefined],
    ['http://127.0.0.1:9000/hooks-evil', 'allowed prefix'],
    ['http://127.0.0.1:9000/hooksevil', 'allowed prefix'],
    ['http://127.0.0.1:9000/hooks/../evil', 'allowed prefix'],
    ['http://127.0.0.1:9001/hooks/x', 'allowed prefix'],
    ['http://127.0.0.1/hooks/x', 'allowed prefix'],
    ['http://0x7f.1:9000/hooks/x', undefined],
    ['http://[::1]:9000/hooks/x', 'allowed prefix'],
  ];
  it('compares scheme, host, port (explicit or default) and path at a segment boundary against a configured prefix', () => {
    const outcome = Object.fromEntries(
      table.map(([url]) => [url, hub.refusal(url)?.match(/allowed prefix|user information/)?.[0]]),
    );
    expect(outcome).toEqual(Object.fromEntries(table));
  });

  it('a prefix ending in "/" admits what is under it, and one without a path admits every path', () => {
    const a = new SignalAddresses(prefixes('http://127.0.0.1:9000/hooks/', 'https://whole.example'), []);
    expect(a.refusal('http://127.0.0.1:9000/hooks/x')).toBeUndefined();
    expect(a.refusal('http://127.0.0.1:9000/hooks')).toMatch(/allowed prefix/);
    expect(a.refusal('https://whole.example/anything/at/all')).toBeUndefined();
    expect(a.refusal('https://whole.example:444/')).toMatch(/allowed prefix/);
  });

  it('refuses configured prefixes with user information, a query, a fragment or another scheme, naming the variable', () => {
    for (const bad of [
      'http://u@127.0.0.1',
      'http://127.0.0.1/?a=1',
      'http://127.0.0.1/#x',
      'ftp://127.0.0.1',
      'not a url',
      'http:127.0.0.1',
    ]) {
      expect(() => loadRepohostConfig({ REPOHOST_SIGNAL_URL_PREFIXES: bad }), bad).toThrow(
        /REPOHOST_SIGNAL_URL_PREFIXES/,
      );
    }
    expect(() => loadRepohostConfig({ REPOHOST_SIGNAL_REFUSED_PORTS: '8001,eighty' })).toThrow(
      /REPOHOST_SIGNAL_REFUSED_PORTS/,
    );
    expect(loadRepohostConfig({ REPOHOST_SIGNAL_REFUSED_PORTS: '9001, 9002' }).signalRefusedPorts).toEqual([
      9001, 9002,
    ]);
  });

  it('property: whatever is admitted goes to a loopback host, on a port that is not refused, with no user information', () => {
    const fragment = fc.constantFrom(
      'http://',
      'https://',
      'HTTP://',
      '127.0.0.1',
      'localhost',
      '[::1]',
      '0x7f.1',
      '127.1',
      'evil.example',
      '@',
      ':',
      ':@',
      ':9000',
      ':8001',
      ':8011',
      ':*',
      '/',
      '/hooks',
      '..',
      '%2e',
      '%40',
      '%2F',
      '\\',
      '#',
      '?',
      '.',
      'user',
      'pass',
      ' ',
      '\t',
    );
    let admitted = 0;
    fc.assert(
      // Mostly a scheme and a host first, then anything: so that many draws come close to an admitted address.
      fc.property(
        fc.oneof(fragment, fc.constantFrom('http://', 'https://')),
        fc.oneof(fragment, fc.constantFrom('127.0.0.1', 'localhost', '[::1]')),
        fc.array(fragment, { maxLength: 7 }),
        (scheme, host, rest) => {
          const raw = [scheme, host, ...rest].join('');
          if (loopback.refusal(raw) !== undefined) return;
          admitted += 1;
          const url = new URL(raw);
          expect(url.username + url.password).toBe('');
          expect(['127.0.0.1', 'localhost', '[::1]']).toContain(url.hostname);
          expect(loopback.refusedPorts.has(Number(url.port || (url.protocol === 'https:' ? 443 : 80)))).toBe(false);
          expect(url.protocol).toBe('http:');
        },
      ),
      propertyOptions({ numRuns: 5000 }),
    );
    // Control: the draws reach admitted addresses, so the property is not vacuous.
    expect(admitted).toBeGreaterThan(0);
  });
});

describe('each rule of a signal address, in its own words', () => {
  it('a prefix\u2019s port is the one it names, any for "*", or its scheme\u2019s default: 80 for http, 443 for https', () => {
    expect(parseSignalPrefix('https://hooks.example.com/hub')).toEqual({
      text: 'https://hooks.example.com/hub',
      protocol: 'https:',
      hostname: 'hooks.example.com',
      port: 443,
      path: '/hub',
    });
    expect(parseSignalPrefix('http://hooks.example.com')).toMatchObject({ port: 80, path: '/' });
    expect(parseSignalPrefix('https://hooks.example.com:8443/a/')).toMatchObject({ port: 8443, path: '/a/' });
    expect(parseSignalPrefix('HTTP://LOCALHOST:*/hooks')).toMatchObject({
      protocol: 'http:',
      hostname: 'localhost',
      port: undefined,
      path: '/hooks',
    });
    expect(parseSignalPrefix('https://[::1]:*')).toMatchObject({ hostname: '[::1]', port: undefined, path: '/' });
  });

  it('an https prefix without a port admits port 443 only: not 80, not another', () => {
    const https = new SignalAddresses(prefixes('https://hooks.example.com/hub'), []);
    expect(https.refusal('https://hooks.example.com/hub/a')).toBeUndefined();
    expect(https.refusal('https://hooks.example.com:443/hub/a')).toBeUndefined();
    expect(https.refusal('https://hooks.example.com:80/hub/a')).toMatch(/allowed prefix/);
    expect(https.refusal('https://hooks.example.com:8443/hub/a')).toMatch(/allowed prefix/);
    const http = new SignalAddresses(prefixes('http://hooks.example.com/hub'), []);
    expect(http.refusal('http://hooks.example.com:80/hub/a')).toBeUndefined();
    expect(http.refusal('http://hooks.example.com:443/hub/a')).toMatch(/allowed prefix/);
  });

  it('refuses a prefix that is not one, saying what it must be', () => {
    expect(parseSignalPrefix('not a url')).toBe(
      '"not a url" is not a URL such as http://127.0.0.1:* or https://hooks.example.com/hub',
    );
    expect(parseSignalPrefix('http://x:*a')).toMatch(/is not a URL such as/);
    expect(parseSignalPrefix('http://u@x:*')).toMatch(/is not a URL such as|without user information/);
    expect(parseSignalPrefix('ftp://x')).toBe('"ftp://x" is not an http or https address');
    // Only at the start: "http://" further on makes neither a prefix with any port nor an address.
    expect(parseSignalPrefix('xhttp://x:*')).toMatch(/is not a URL such as/);
    expect(parseSignalPrefix('http:x/http://y')).toBe(
      '"http:x/http://y" must be scheme://host[:port][/path], without user information',
    );
    for (const bad of ['http:x', 'http:/x', 'http://u@x', 'http://:p@x', 'http://x/@'])
      expect(parseSignalPrefix(bad), bad).toBe(
        `"${bad}" must be scheme://host[:port][/path], without user information`,
      );
    for (const bad of ['http://x/?', 'http://x/#', 'http://x/?a=1', 'http://x#f'])
      expect(parseSignalPrefix(bad), bad).toBe(`"${bad}" must not have a query or a fragment`);
  });

  it('refuses an address outside printable ASCII, or with a space or a backslash, before anything else', () => {
    const printable = 'signal_url must be printable ASCII, without spaces or backslashes';
    for (const raw of [
      'http://127.0.0.1:9000/a b',
      'http://127.0.0.1:9000/\u007f',
      'http://127.0.0.1:9000/\u00e9',
      'http://127.0.0.1:9000/\u0000',
      'http://127.0.0.1:9000/a\\b',
      ' http://127.0.0.1:9000/',
    ])
      expect(loopback.refusal(raw), JSON.stringify(raw)).toBe(printable);
    // The printable edges, "!" and "~", are admitted.
    expect(loopback.refusal('http://127.0.0.1:9000/!~')).toBeUndefined();
  });

  it('refuses what does not start with http:// or https://, and what the URL parser refuses', () => {
    for (const raw of ['xhttp://127.0.0.1:9000/', 'http:/127.0.0.1:9000/', 'ws://127.0.0.1:9000/'])
      expect(loopback.refusal(raw), raw).toBe('signal_url must start with http:// or https://');
    expect(loopback.refusal('HTTPS://localhost:9000/')).toMatch(/allowed prefix/);
    for (const raw of ['http://', 'http://127.0.0.1:65536/', 'http://[::1/'])
      expect(loopback.refusal(raw), raw).toBe('signal_url must be an absolute http or https URL');
  });

  it('refuses user information, a fragment and encoded dots or slashes in the path, each in its words', () => {
    expect(loopback.refusal('http://u@127.0.0.1:9000/')).toBe(
      'signal_url must not carry user information ("user:password@" before the host); send the address of the receiver itself',
    );
    expect(loopback.refusal('http://127.0.0.1:9000/#')).toBe(
      'signal_url must not carry a fragment ("#..."); it is never sent to the receiver',
    );
    // (A whole segment of %2E%2E is ".." to the parser, which resolves it before the path is compared.)
    for (const raw of ['http://127.0.0.1:9000/a%2Eb', 'http://127.0.0.1:9000/a%2fb', 'http://127.0.0.1:9000/a%5Cb'])
      expect(loopback.refusal(raw), raw).toBe(
        'signal_url\u2019s path must not encode ".", "/" or "\\" (%2E, %2F, %5C)',
      );
  });

  it('refuses user information behind extra slashes, which the URL parser skips', () => {
    for (const raw of ['http:///user@127.0.0.1:9000/', 'http:///:pass@127.0.0.1:9000/', 'http:////u:p@127.0.0.1:9000/'])
      expect(loopback.refusal(raw), raw).toMatch(/^signal_url must not carry user information/);
  });

  it('an "@" after the host, in the path or the query, is no user information', () => {
    expect(loopback.refusal('http://127.0.0.1:9000/a@b')).toBeUndefined();
    expect(loopback.refusal('http://127.0.0.1:9000?x@y')).toBeUndefined();
    // Encoded dots and slashes in the query are the receiver's business, not its path.
    expect(loopback.refusal('http://127.0.0.1:9000/h?x=%2F%2e')).toBeUndefined();
  });

  it('refuses port 0, and this app\u2019s own ports however they are reached, the scheme\u2019s default included', () => {
    expect(loopback.refusal('http://127.0.0.1:0/')).toBe('signal_url needs a port from 1 to 65535');
    const own = new SignalAddresses(prefixes('http://127.0.0.1:*', 'https://127.0.0.1:*'), [80, 443, 8001]);
    expect(own.refusal('http://127.0.0.1/x')).toBe(
      'signal_url\u2019s port 80 is one of this app\u2019s own services (REPOHOST_SIGNAL_REFUSED_PORTS); point it at the hub\u2019s receiver',
    );
    expect(own.refusal('https://127.0.0.1/x')).toMatch(/^signal_url\u2019s port 443 is one of/);
    expect(own.refusal('https://127.0.0.1:8001/x')).toMatch(/^signal_url\u2019s port 8001 is one of/);
    expect(own.refusal('https://127.0.0.1:8002/x')).toBeUndefined();
    expect(own.refusedPorts).toEqual(new Set([80, 443, 8001]));
  });

  it('names every allowed prefix and the setting when an address is under none', () => {
    expect(hub.refusal('https://other.example/')).toBe(
      'signal_url is not under an allowed prefix; use an address under one of https://hooks.example.com/hub, http://127.0.0.1:9000/hooks, or add its prefix to REPOHOST_SIGNAL_URL_PREFIXES',
    );
  });

  it('a path is under a prefix at a segment boundary, whether the prefix ends in "/" or not', () => {
    const a = new SignalAddresses(
      prefixes('http://127.0.0.1:9000/a/b', 'http://127.0.0.1:9001/c/', 'http://127.0.0.1:9002/'),
      [],
    );
    expect(a.refusal('http://127.0.0.1:9000/a/b')).toBeUndefined();
    expect(a.refusal('http://127.0.0.1:9000/a/b/c')).toBeUndefined();
    expect(a.refusal('http://127.0.0.1:9000/a/bc')).toMatch(/allowed prefix/);
    expect(a.refusal('http://127.0.0.1:9000/a/')).toMatch(/allowed prefix/);
    expect(a.refusal('http://127.0.0.1:9000/')).toMatch(/allowed prefix/);
    expect(a.refusal('http://127.0.0.1:9001/c/')).toBeUndefined();
    expect(a.refusal('http://127.0.0.1:9001/c/d')).toBeUndefined();
    expect(a.refusal('http://127.0.0.1:9001/c')).toMatch(/allowed prefix/);
    expect(a.refusal('http://127.0.0.1:9001/cd')).toMatch(/allowed prefix/);
    expect(a.refusal('http://127.0.0.1:9002/')).toBeUndefined();
    expect(a.refusal('http://127.0.0.1:9002/anything/at/all')).toBeUndefined();
    // The scheme must match too.
    expect(a.refusal('https://127.0.0.1:9002/')).toMatch(/allowed prefix/);
  });
});
