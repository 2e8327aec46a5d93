import type { NextFunction, Request, Response } from 'express';
import { describe, expect, it } from 'vitest';
import { hostCheck, isAllowedHost, parseHostHeader } from './host-check.ts';
import { Problem } from './problem.ts';

describe('parseHostHeader', () => {
  it('reads the name and the port of a Host header, with or without a port', () => {
    expect(parseHostHeader('127.0.0.1:8127')).toEqual({ name: '127.0.0.1', port: 8127 });
    expect(parseHostHeader('[::1]:8127')).toEqual({ name: '::1', port: 8127 });
    expect(parseHostHeader('localhost')).toEqual({ name: 'localhost' });
  });

  it('reads nothing out of a missing or malformed header', () => {
    expect(parseHostHeader(undefined)).toBeUndefined();
    expect(parseHostHeader('')).toBeUndefined();
    expect(parseHostHeader('evil.example/path')).toBeUndefined();
    expect(parseHostHeader('user@127.0.0.1')).toBeUndefined();
  });

  it('names in lower case, IPv6 without brackets, the header trimmed', () => {
    expect(parseHostHeader('LocalHost:80')).toEqual({ name: 'localhost', port: 80 });
    expect(parseHostHeader('[::FFFF:127.0.0.1]')).toEqual({ name: '::ffff:127.0.0.1' });
    expect(parseHostHeader('[ABCD::1]:443')).toEqual({ name: 'abcd::1', port: 443 });
    expect(parseHostHeader(' id.Example.com:8443 ')).toEqual({ name: 'id.example.com', port: 8443 });
    expect(parseHostHeader('a')).toEqual({ name: 'a' });
  });

  it('a port of one to five digits up to 65535; none above, none longer, none empty', () => {
    expect(parseHostHeader('127.0.0.1:65535')).toEqual({ name: '127.0.0.1', port: 65535 });
    expect(parseHostHeader('127.0.0.1:0')).toEqual({ name: '127.0.0.1', port: 0 });
    expect(parseHostHeader('127.0.0.1:08001')).toEqual({ name: '127.0.0.1', port: 8001 });
    expect(parseHostHeader('127.0.0.1:1')).toEqual({ name: '127.0.0.1', port: 1 });
    for (const bad of [
      '127.0.0.1:65536',
      '127.0.0.1:99999',
      '127.0.0.1:123456',
      '127.0.0.1:',
      '127.0.0.1:8x',
      '127.0.0.1:-1',
    ])
      expect(parseHostHeader(bad), bad).toBeUndefined();
  });

  it('nothing but a name or a bracketed IPv6 address before the port', () => {
    for (const bad of [
      'a b',
      'a\tb',
      'a:1:2',
      '[::1',
      '::1]',
      '[::1]]',
      '[]',
      '[::g]',
      '[::1]x',
      'x[::1]',
      'a/b',
      'a@b',
      'a?b',
      'a#b',
      'a[b',
      'a]b',
      ':8001',
      '127.0.0.1:8001x',
      'x\n127.0.0.1',
    ])
      expect(parseHostHeader(bad), JSON.stringify(bad)).toBeUndefined();
  });
});

describe('isAllowedHost', () => {
  it('allows every loopback name with any port or none, and nothing else by default', () => {
    for (const host of [
      '127.0.0.1',
      '127.0.0.1:8004',
      '127.9.8.7:1',
      'localhost:3000',
      'LOCALHOST',
      '[::1]:8001',
      '[::1]',
    ])
      expect(isAllowedHost(host), host).toBe(true);
    for (const host of [
      undefined,
      '',
      'example.com',
      'evil.example:8004',
      '127.0.0.1.evil.example',
      '[::2]',
      '127.0.0.1:99999',
    ])
      expect(isAllowedHost(host), String(host)).toBe(false);
  });

  it('allows a name of allowedHosts with any port, or with its port only when it names one', () => {
    const allowed = ['id.example.com', 'api.example.com:8443', 'not a host'];
    expect(isAllowedHost('id.example.com', allowed)).toBe(true);
    expect(isAllowedHost('ID.example.com:9', allowed)).toBe(true);
    expect(isAllowedHost('api.example.com:8443', allowed)).toBe(true);
    expect(isAllowedHost('api.example.com', allowed)).toBe(false);
    expect(isAllowedHost('api.example.com:8444', allowed)).toBe(false);
    expect(isAllowedHost('other.example.com', allowed)).toBe(false);
    expect(isAllowedHost('not a host', allowed)).toBe(false);
    expect(isAllowedHost('example.com', allowed)).toBe(false);
  });
});

describe('hostCheck', () => {
  /** What the middleware passes on for a request with this Host, arriving on `localPort`. */
  function outcome(host: string | undefined, allowedHosts?: string[], localPort?: number): unknown {
    let passed: unknown = 'not called';
    const req = { headers: host === undefined ? {} : { host }, socket: { localPort } } as unknown as Request;
    const next = ((err?: unknown) => (passed = err)) as NextFunction;
    hostCheck(allowedHosts)(req, {} as Response, next);
    return passed;
  }

  it('passes a request addressed to this machine on, untouched', () => {
    expect(outcome('127.0.0.1:8004', [], 8004)).toBeUndefined();
    expect(outcome('id.example.com', ['id.example.com'], 8001)).toBeUndefined();
  });

  it('refuses any other with 421, naming the allowed names and the loopback URL, never the Host it was sent', () => {
    const refused = outcome('evil.example:8004', ['id.example.com:8443', '%bad%/'], 8004);
    expect(refused).toBeInstanceOf(Problem);
    const problem = refused as Problem;
    expect(problem.status).toBe(421);
    expect(problem.title).toBe('Misdirected Request');
    expect(problem.detail).toBe(
      'This service answers only requests addressed to 127.0.0.1, [::1], localhost, id.example.com in the Host header; ' +
        'call it at http://127.0.0.1:8004/ (a web page reaching it under another name is refused).',
    );
    expect(problem.detail).not.toContain('evil');
    expect((outcome(undefined, undefined, 8001) as Problem).detail).toBe(
      'This service answers only requests addressed to 127.0.0.1, [::1], localhost in the Host header; ' +
        'call it at http://127.0.0.1:8001/ (a web page reaching it under another name is refused).',
    );
    expect((outcome('evil.example') as Problem).detail).toMatch(/call it at http:\/\/127\.0\.0\.1\/ \(/);
  });
});
