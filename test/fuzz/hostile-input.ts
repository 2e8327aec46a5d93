/**
 * What an attacker, a broken client or a careless program sends: path segments, query strings, JSON
 * values and whole bodies that are hostile to routers, parsers, validators and recursive walks; and a
 * sampler that turns a route's JSON Schema (from its service's /openapi.json) into a plausible body, so
 * that one hostile member reaches the code behind validation instead of stopping at it.
 */
import fc from 'fast-check';

const deepArrays = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
const deepObjects = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;

/** Path segments as they appear on the wire (already percent-encoded where they must be). */
export const HOSTILE_SEGMENTS: readonly string[] = [
  '',
  '.',
  '..',
  '%2e%2e',
  '..%2f..%2f..%2fetc%2fpasswd',
  '%2F',
  '%5C..%5C',
  'constructor',
  '__proto__',
  'prototype',
  'hasOwnProperty',
  'toString',
  'valueOf',
  '__defineGetter__',
  '_schema',
  '%00',
  'a%00b',
  '%ff',
  '%c3%28',
  '%ed%a0%80',
  '%ed%b0%80x',
  '%f4%90%80%80',
  '%e0%a4%a',
  '%',
  '%zz',
  '%25',
  '%25ff',
  'x'.repeat(5_000),
  '%C3%A9t%C3%A9',
  '%F0%9F%92%A9',
  '%E2%80%AE',
  '%20',
  '+',
  ';x=1',
  'a%0d%0aSet-Cookie:%20x=1',
  '%3Cscript%3Ealert(1)%3C%2Fscript%3E',
  '%22%27',
  'null',
  'undefined',
  'NaN',
  '-1',
  '0',
  '1e309',
  '9'.repeat(40),
  'CON',
  '~',
  '@',
  ':',
];

/** Values a query parameter may be given (raw, on the wire). */
export const HOSTILE_QUERY_VALUES: readonly string[] = [
  '',
  '%00',
  'a%00b',
  '%ff',
  '%ed%a0%80',
  '%',
  '%zz',
  '-1',
  '0',
  '1.5',
  '1e309',
  '-1e309',
  '99999999999999999999999',
  'NaN',
  'Infinity',
  '__proto__',
  'constructor',
  'true',
  'x'.repeat(10_000),
  '%22%3B%20DROP%20TABLE%20x%3B--',
  '*',
  'AND',
  '2999-99-99T99%3A99%3A99Z',
];

/** Query strings that attack the parser itself rather than one parameter; `p` is a parameter the route knows. */
export function hostileQueries(p: string): string[] {
  return [
    `${p}=1&${p}=2`,
    `${p}[]=1&${p}[]=2`,
    `${p}[a]=1`,
    `${p}`,
    `${p}=1&${p}`,
    '__proto__=1',
    '__proto__[x]=1',
    'constructor=1&constructor[prototype]=1',
    'toString=x&hasOwnProperty=y&valueOf=z',
    `${p}=%&%=1`,
    '&&&=&=',
    `${'a=1&'.repeat(2_000)}${p}=1`,
    `${p}=${'%ff'.repeat(500)}`,
  ];
}

/** JSON texts put in place of one member of an otherwise plausible body. */
export const HOSTILE_VALUES: readonly string[] = [
  'null',
  'true',
  '0',
  '-1',
  '-0',
  '1.5',
  '1e400',
  '-1e400',
  '123456789012345678901234567890',
  '""',
  '"\\u0000"',
  '"a\\u0000b"',
  '"\\ud800"',
  '"x\\udc00y"',
  '"\\ud83d\\ude00"',
  `"${'x'.repeat(100_000)}"`,
  '[]',
  '{}',
  '[null]',
  deepArrays(2_000),
  deepObjects(2_000),
  deepArrays(100),
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '["__proto__","constructor"]',
  '"__proto__"',
  '"constructor"',
  '"../../etc/passwd"',
  '"<script>alert(1)</script>"',
  '"\\r\\nSet-Cookie: x=1"',
  '"%00"',
  '{"$ref":"#"}',
  '"2999-99-99T99:99:99Z"',
  `[${new Array(10_000).fill('0').join(',')}]`,
];

/** Whole bodies, as bytes, that no route should accept and none should fail on. */
export const HOSTILE_BODIES: readonly (string | Buffer)[] = [
  '',
  '{',
  '}',
  '[',
  'null',
  'true',
  '1',
  '"x"',
  '[]',
  '{}',
  'NaN',
  "{'a':1}",
  '{"a":1,}',
  '{"a":1}{"b":2}',
  '\u0000',
  '{"a":"\u0000"}',
  Buffer.from([0xff, 0xfe, 0x00, 0x7b]),
  Buffer.from('{"a":"\xff"}', 'latin1'),
  Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]),
  deepArrays(2_000),
  deepArrays(100_000),
  deepObjects(2_000),
  '1e400',
  '123456789012345678901234567890',
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  `{"a":"${'x'.repeat(300_000)}"}`,
];

/** Content types a body may claim besides application/json. */
export const HOSTILE_CONTENT_TYPES: readonly (string | undefined)[] = [
  undefined,
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'application/merge-patch+json',
  'application/json, text/plain',
];

/** Authorization headers that carry no usable token. */
export const HOSTILE_AUTHORIZATIONS: readonly string[] = [
  '',
  'Bearer',
  'Bearer ',
  'Bearer x',
  'Basic dXNlcjpwYXNz',
  `Bearer ${'a'.repeat(10_000)}`,
  // alg "none", sub "local", aud "persona"
  'Bearer eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJsb2NhbCIsImF1ZCI6InBlcnNvbmEiLCJleHAiOjQxMDI0NDQ4MDB9.',
  'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.%00',
  'Bearer a.b.c',
];

/** A JSON Schema as OpenAPI 3.1 gives it (enough of it for sampling). */
export interface Schema {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  exclusiveMinimum?: number;
  maximum?: number;
  minItems?: number;
  additionalProperties?: boolean | Schema;
}

/**
 * A plausible instance of `schema`: required members (and those named in `known`), known values where
 * the name has one (a profile that exists, the connection's profile), else the first enum value, the
 * minimum, or a string drawn (with the file's seed) to match the pattern.
 */
export function sampleOf(
  schema: Schema,
  components: Record<string, Schema>,
  known: Record<string, unknown>,
  seed: number,
  depth = 0,
): unknown {
  const s = resolve(schema, components);
  if (depth > 6) return null;
  if ('const' in s) return s.const;
  if (s.enum && s.enum.length > 0) return s.enum[0];
  const choice = s.anyOf ?? s.oneOf;
  if (choice && choice.length > 0) {
    const usable = choice.find((c) => resolve(c, components).type !== 'null') ?? choice[0]!;
    return sampleOf(usable, components, known, seed, depth + 1);
  }
  if (s.allOf) {
    return Object.assign({}, ...s.allOf.map((part) => sampleOf(part, components, known, seed, depth + 1) as object));
  }
  const type = Array.isArray(s.type) ? (s.type.find((t) => t !== 'null') ?? 'null') : s.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [name, member] of Object.entries(s.properties ?? {})) {
        if (name in known) out[name] = known[name];
        else if (s.required?.includes(name)) out[name] = sampleOf(member, components, known, seed, depth + 1);
      }
      return out;
    }
    case 'array':
      return Array.from({ length: Math.max(1, s.minItems ?? 1) }, () =>
        sampleOf(s.items ?? {}, components, known, seed, depth + 1),
      );
    case 'integer':
    case 'number':
      return s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : 1);
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'string':
      return sampleString(s, seed);
    default:
      return 'x';
  }
}

function sampleString(s: Schema, seed: number): string {
  if (s.default !== undefined && typeof s.default === 'string') return s.default;
  if (s.format === 'date-time') return new Date(0).toISOString();
  if (s.format === 'uri' || s.format === 'url') return 'http://127.0.0.1:9/hub/x';
  if (s.pattern) {
    try {
      const drawn = fc.sample(fc.stringMatching(new RegExp(s.pattern), { maxLength: s.maxLength ?? 40 }), {
        numRuns: 1,
        seed,
      })[0]!;
      if (drawn.length >= (s.minLength ?? 0) && drawn.length <= (s.maxLength ?? Infinity)) return drawn;
    } catch {
      /* a pattern fast-check cannot draw from: fall through to a plain string */
    }
  }
  return 'x'.repeat(Math.max(1, s.minLength ?? 1));
}

function resolve(schema: Schema, components: Record<string, Schema>): Schema {
  let s = schema;
  for (let i = 0; i < 10 && s.$ref; i++) s = components[s.$ref.replace('#/components/schemas/', '')] ?? {};
  return s;
}

/** The member paths of a sampled body (`["value"]`, `["messages", 0, "content"]`), the body itself as `[]`. */
export function memberPaths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [prefix];
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...memberPaths(v, [...prefix, i])));
  else if (value && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) out.push(...memberPaths(v, [...prefix, k]));
  return out;
}

const MARK = '__fuzz_member_7f3a9c__';

/** The JSON text of `body` with the member at `path` replaced by the raw JSON text `hostile` (a new member where there was none). */
export function withMember(body: unknown, path: (string | number)[], hostile: string): string {
  if (path.length === 0) return hostile;
  const copy = structuredClone(body) as Record<string | number, unknown>;
  let node = copy;
  for (const step of path.slice(0, -1)) node = node[step] as Record<string | number, unknown>;
  node[path.at(-1)!] = MARK;
  return JSON.stringify(copy).replace(`"${MARK}"`, () => hostile);
}
