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

describe('urlPath, each refusal in its own words', () => {
  it('says a path starts with one "/"', () => {
    for (const make of [() => urlPath`v1/${'a'}`, () => urlPath`//x/${'a'}`, () => urlPath``])
      expect(make).toThrow(new TypeError('urlPath: a path starts with one "/".'));
    expect(urlPath`/`).toBe('/');
  });

  it('says a value must be a whole segment, before or after it, for every value', () => {
    const whole = new TypeError('urlPath: a value must be a whole segment between slashes.');
    expect(() => urlPath`/v1${'a'}/`).toThrow(whole);
    expect(() => urlPath`/v1/${'a'}b`).toThrow(whole);
    expect(() => urlPath`/v1/${'a'}b/`).toThrow(whole);
    expect(() => urlPath`/v1/${'a'}/x${'b'}`).toThrow(whole);
    expect(() => urlPath`/v1/${'a'}/${'b'}c`).toThrow(whole);
    expect(urlPath`/v1/${'a b'}/${'c/d'}/e/${3}`).toBe('/v1/a%20b/c%2Fd/e/3');
  });

  it('says what is wrong with a value without repeating it', () => {
    expect(() => urlPath`/v1/${''}`).toThrow(
      new PathSegmentError('A name in the address is empty; give it at least one character.'),
    );
    for (const dots of ['.', '..'])
      expect(() => urlPath`/v1/${dots}`).toThrow(
        new PathSegmentError(
          'A name in the address may not be "." or ".." (it would name another place); choose another.',
        ),
      );
    expect(() => urlPath`/v1/${'\uDC00x'}`).toThrow(
      new PathSegmentError(
        'A name in the address is not valid Unicode text (it holds a lone surrogate); send it as ordinary text.',
      ),
    );
    expect(new PathSegmentError('x').name).toBe('PathSegmentError');
  });

  it("encodes all but letters, digits and -_.!~*'()", () => {
    expect(urlPath`/${"AZaz09-_.!~*'()"}`).toBe("/AZaz09-_.!~*'()");
    expect(urlPath`/${' "#%&+,/:;<=>?@[\\]^`{|}'}`).toBe(
      '/%20%22%23%25%26%2B%2C%2F%3A%3B%3C%3D%3E%3F%40%5B%5C%5D%5E%60%7B%7C%7D',
    );
    expect(urlPath`/${'é☃'}`).toBe('/%C3%A9%E2%98%83');
  });
});
