import { describe, expect, it } from 'vitest';
import { parseHostHeader } from './host-check.ts';

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
});
