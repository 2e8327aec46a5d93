import { describe, expect, it } from 'vitest';
import { PathSegmentError, urlPath } from './url-path.ts';

describe('urlPath', () => {
  it('encodes each value as one segment', () => {
    expect(urlPath`/v1/personas/${'household'}/fields/${'favourite tea'}`).toBe(
      '/v1/personas/household/fields/favourite%20tea',
    );
    expect(urlPath`/v1/personas/${'a/..'}/notes/${'%2e%2e'}`).toBe('/v1/personas/a%2F../notes/%252e%252e');
    expect(urlPath`/v1/x/${'?q=1#f'}`).toBe('/v1/x/%3Fq%3D1%23f');
    expect(urlPath`/v1/recall`).toBe('/v1/recall');
    expect(urlPath`/v1/things/${7}/`).toBe('/v1/things/7/');
  });

  it('keeps every value a path step of its own after URL resolution', () => {
    for (const value of ['a/..', '%2e%2e', '.%2e', '..\\', 'x/../../', '\\..', '.. ', '...']) {
      const url = new URL(urlPath`/v1/personas/p/fields/${value}`, 'http://127.0.0.1:8004');
      expect(url.pathname.startsWith('/v1/personas/p/fields/')).toBe(true);
      expect(url.pathname.split('/')).toHaveLength(6);
    }
  });

  it.each(['.', '..', ''])('refuses %j, saying what to change without repeating it', (value) => {
    expect(() => urlPath`/v1/personas/p/fields/${value}`).toThrow(PathSegmentError);
  });

  it('refuses text that is not valid Unicode', () => {
    expect(() => urlPath`/v1/personas/${'a\uD800'}`).toThrow(/lone surrogate/);
  });

  it('refuses a value that is part of a segment, and a path that does not start with one slash', () => {
    expect(() => urlPath`/v1/personas/x${'a'}`).toThrow(TypeError);
    expect(() => urlPath`/v1/personas/${'a'}.json`).toThrow(TypeError);
    expect(() => urlPath`v1/${'a'}`).toThrow(TypeError);
    expect(() => urlPath`//evil.example/${'a'}`).toThrow(TypeError);
  });
});
