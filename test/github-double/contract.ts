import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { ROOT } from '../support/process.ts';

/**
 * GitHub's own OpenAPI description (`@octokit/openapi`, read from disk: requiring the package loads
 * every variant, hundreds of MB). Operations are matched by method and path; request and response
 * validators are compiled lazily, one operation at a time, so only what the double serves is compiled.
 */
const DESCRIPTION = join(ROOT, 'node_modules', '@octokit', 'openapi', 'generated', 'api.github.com.json');

type Json = Record<string, unknown>;
interface Operation {
  operationId: string;
  parameters?: Json[];
  requestBody?: { content?: Record<string, { schema?: Json }> };
  responses: Record<string, Json>;
}
export interface MatchedOperation {
  method: string;
  template: string;
  operationId: string;
  params: Record<string, string>;
  op: Operation;
}

export class ContractViolation extends Error {
  override name = 'ContractViolation';
}

/** OpenAPI 3.0 `nullable` is not JSON Schema; turn it into a type union (or an anyOf with null). */
function toJsonSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toJsonSchema);
  if (!node || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node as Json)) {
    if (k === 'nullable' || k === 'example' || k === 'examples' || k === 'x-github' || k === 'x-octokit') continue;
    out[k] = toJsonSchema(v);
  }
  if ((node as Json).nullable === true) {
    if (typeof out.type === 'string') {
      out.type = [out.type, 'null'];
      if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
      return out;
    }
    return { anyOf: [out, { type: 'null' }] };
  }
  return out;
}

const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => void;

export class Contract {
  private readonly doc: { paths: Record<string, Record<string, Operation>>; components: Json };
  private readonly routes: { method: string; template: string; regex: RegExp; names: string[]; literal: number }[] = [];
  private readonly ajv: Ajv;
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(file = DESCRIPTION) {
    this.doc = JSON.parse(readFileSync(file, 'utf8')) as Contract['doc'];
    this.ajv = new Ajv({
      strict: false,
      allErrors: true,
      coerceTypes: false,
      logger: false,
      formats: { 'repo.nwo': true },
    });
    addFormats(this.ajv);
    this.ajv.addSchema({ components: toJsonSchema(this.doc.components) as Json }, 'gh');
    for (const [template, item] of Object.entries(this.doc.paths)) {
      for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
        if (!item[method]) continue;
        const names: string[] = [];
        const pattern = template.replace(/\{(\w+)\}/g, (_m, name: string) => {
          names.push(name);
          // File paths and full git refs carry slashes; everything else is one segment.
          return name === 'path' || (name === 'ref' && /\/git\/refs?\/\{ref\}$/.test(template)) ? '(.+)' : '([^/]+)';
        });
        this.routes.push({
          method,
          template,
          regex: new RegExp(`^${pattern}$`),
          names,
          literal: template.replace(/\{\w+\}/g, '').length,
        });
      }
    }
    this.routes.sort((a, b) => b.literal - a.literal);
  }

  /** The documented operation for a request, or a violation: the double must never answer an undocumented route. */
  match(method: string, path: string): MatchedOperation {
    const m = method.toLowerCase();
    for (const r of this.routes) {
      if (r.method !== m) continue;
      const hit = r.regex.exec(path);
      if (!hit) continue;
      const params: Record<string, string> = {};
      r.names.forEach((n, i) => (params[n] = decodeURIComponent(hit[i + 1]!)));
      const op = this.doc.paths[r.template]![m]!;
      return { method: m, template: r.template, operationId: op.operationId, params, op };
    }
    throw new ContractViolation(`${method} ${path} matches no operation in GitHub's OpenAPI description`);
  }

  private resolve<T>(node: T): T {
    let n = node as Json;
    while (n && typeof n.$ref === 'string') {
      const parts = (n.$ref as string).replace(/^#\//, '').split('/');
      n = parts.reduce<Json>((acc, p) => acc[p] as Json, this.doc as unknown as Json);
    }
    return n as T;
  }

  private validator(key: string, schema: Json): ValidateFunction {
    let v = this.compiled.get(key);
    if (!v) {
      // Schemas are compiled inside a document whose $refs point at the shared components.
      const rewritten = JSON.parse(
        JSON.stringify(toJsonSchema(schema)).replace(/"#\/components\//g, '"gh#/components/'),
      ) as Json;
      v = this.ajv.compile(rewritten);
      this.compiled.set(key, v);
    }
    return v;
  }

  private check(key: string, schema: Json, value: unknown, what: string): void {
    const v = this.validator(key, schema);
    if (!v(value)) {
      const errs = (v.errors ?? [])
        .slice(0, 4)
        .map((e) => `${e.instancePath || '(root)'} ${e.message ?? ''}`)
        .join('; ');
      throw new ContractViolation(`${what} does not match GitHub's schema: ${errs}`);
    }
  }

  validateRequest(m: MatchedOperation, query: Record<string, string>, body: unknown, hasBody: boolean): void {
    const what = `${m.method.toUpperCase()} ${m.template} (${m.operationId})`;
    const params = (m.op.parameters ?? []).map((p) => this.resolve(p)) as {
      name: string;
      in: string;
      schema?: Json;
      required?: boolean;
    }[];
    for (const [name, value] of Object.entries(query)) {
      const p = params.find((x) => x.in === 'query' && x.name === name);
      if (!p) throw new ContractViolation(`${what}: query parameter "${name}" is not documented`);
      const schema = (p.schema ?? {}) as Json;
      const typed =
        schema.type === 'integer' || schema.type === 'number'
          ? Number(value)
          : schema.type === 'boolean'
            ? value === 'true'
            : value;
      this.check(`${m.operationId} query ${name}`, schema, typed, `${what} query parameter ${name}`);
    }
    const content = m.op.requestBody?.content?.['application/json'];
    if (hasBody && !content) throw new ContractViolation(`${what} takes no JSON body, but one was sent`);
    if (content?.schema && hasBody)
      this.check(`${m.operationId} request`, content.schema, body, `${what} request body`);
  }

  /**
   * Every answer is checked: a documented status with a body of its schema. 304, 401, 403/429 (rate
   * limits) and 404 are answered by GitHub on any route, documented or not, with the basic-error shape.
   */
  validateResponse(m: MatchedOperation, status: number, body: unknown): void {
    const what = `${m.operationId} answering ${status}`;
    const documented = m.op.responses[String(status)];
    if (!documented) {
      if ([304, 401, 403, 404, 429].includes(status)) {
        if (status !== 304) this.check('basic-error', { $ref: '#/components/schemas/basic-error' }, body, what);
        return;
      }
      throw new ContractViolation(`${what}: status ${status} is not documented for this operation`);
    }
    const response = this.resolve(documented) as { content?: Record<string, { schema?: Json }> };
    const schema =
      response.content?.['application/json']?.schema ?? response.content?.['application/scim+json']?.schema;
    if (!schema) {
      if (body !== undefined && status !== 302)
        throw new ContractViolation(`${what}: the operation documents no body, but one was sent`);
      return;
    }
    this.check(`${m.operationId} ${status}`, schema, body, what);
  }

  /** A schema of the description, by component name, for building answers. */
  schema(name: string): Json {
    const s = (this.doc.components.schemas as Record<string, Json>)[name];
    if (!s) throw new Error(`no schema ${name}`);
    return s;
  }

  /**
   * A minimal instance of a component schema: every required member with a plausible value of its
   * type, so an answer is built from the schema itself and only its meaningful members are set.
   */
  synthesize(node: Json, depth = 0): unknown {
    const n = this.resolve(node);
    if (depth > 12) return null;
    if (n.nullable === true && depth > 0) return null;
    if (Array.isArray(n.allOf)) {
      return Object.assign({}, ...(n.allOf as Json[]).map((s) => this.synthesize(s, depth + 1) as Json));
    }
    if (Array.isArray(n.oneOf) || Array.isArray(n.anyOf))
      return this.synthesize(((n.oneOf ?? n.anyOf) as Json[])[0]!, depth + 1);
    if (Array.isArray(n.enum)) return n.enum[0];
    switch (n.type) {
      case 'object': {
        const out: Json = {};
        const props = (n.properties ?? {}) as Record<string, Json>;
        for (const key of (n.required ?? []) as string[])
          out[key] = props[key] ? this.synthesize(props[key], depth + 1) : null;
        return out;
      }
      case 'array':
        return [];
      case 'integer':
      case 'number':
        return 1;
      case 'boolean':
        return false;
      case 'string':
        if (n.format === 'date-time') return '2026-01-01T00:00:00Z';
        if (n.format === 'uri' || n.format === 'url') return 'https://github.example/double';
        if (n.format === 'email') return 'double@example.invalid';
        return 'double';
      default:
        if (n.properties) return this.synthesize({ ...n, type: 'object' }, depth);
        return null;
    }
  }
}
