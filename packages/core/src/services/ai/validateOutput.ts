import type { ValidateFunction } from 'ajv';
import { CoreError } from '../../kernel/CoreError.js';
import { selfReference } from './selfReference.js';

type AjvInstance = { compile(schema: object): ValidateFunction };
let ajv: Promise<AjvInstance> | undefined;
/** Compiled validators by schema text; bounded so varied client schemas cannot grow memory. */
const cache = new Map<string, ValidateFunction>();
const CACHE_MAX = 200;

/**
 * A schema's `pattern` runs here on the model's answer, which the caller can steer: a pattern
 * like `^(a+)+$` on 30 characters blocks the event loop for seconds, on 40 for hours, and a
 * running RegExp cannot be stopped. So a group that repeats (`+`, `*`, `{n,}`, `{n,m}`) and itself
 * contains a repetition or an alternation (star height above one, the shape of every
 * catastrophic pattern) is refused when the schema compiles. Character classes and `?` are fine.
 */
export function safeRegExp(pattern: string, flags: string): RegExp {
  const rx = new RegExp(pattern, flags);
  const stack: boolean[] = [false];
  /** Length of the repeating quantifier at i (0 when none; `?` does not repeat). */
  const repeatAt = (i: number): number => {
    const c = pattern[i];
    if (c === '+' || c === '*') return 1;
    if (c !== '{') return 0;
    const m = /^\{(\d*)(,(\d*))?\}/.exec(pattern.slice(i));
    if (!m || (m[2] === undefined && Number(m[1]) <= 1) || (m[3] !== undefined && m[3] !== '' && Number(m[3]) <= 1)) return 0;
    return m[0].length;
  };
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') {
      i++;
    } else if (c === '[') {
      for (i++; i < pattern.length && pattern[i] !== ']'; i++) if (pattern[i] === '\\') i++;
    } else if (c === '(') {
      stack.push(false);
    } else if (c === ')' && stack.length > 1) {
      const risky = stack.pop()!;
      if (risky && repeatAt(i + 1) > 0) {
        throw new Error(
          `pattern ${JSON.stringify(pattern.slice(0, 100))} repeats a group that itself repeats or alternates, which can take exponential time; the server does not run such patterns`,
        );
      }
      if (risky) stack[stack.length - 1] = true;
    } else if (c === '|' || repeatAt(i) > 0) {
      stack[stack.length - 1] = true;
    }
  }
  return rx;
}

async function validator(schema: Record<string, unknown>, what = 'output.schema'): Promise<ValidateFunction> {
  const key = JSON.stringify(schema);
  let v = cache.get(key);
  if (v) return v;
  ajv ??= import('ajv').then((m) => {
    const Ajv = (m.default as unknown as { default?: unknown }).default ?? m.default;
    return new (Ajv as new (o: object) => AjvInstance)({ allErrors: false, strict: false, code: { regExp: safeRegExp } });
  });
  // Ajv's compile overflows the stack on some such loops, and checking a value against the
  // others does: refused first, with a message that says what is wrong.
  const loop = selfReference(schema);
  if (loop)
    throw new CoreError('INVALID_PARAMS', `${what} refers to itself without descending into the value (at ${loop.slice(0, 200)})`, {
      details: { reason: 'invalid_schema', field: what },
    });
  try {
    v = (await ajv).compile(schema);
  } catch (err) {
    // An engine error (a RangeError from a stack overflow) names nothing the caller can fix.
    const reason = err instanceof Error && !(err instanceof RangeError) ? err.message.slice(0, 200) : 'it cannot be compiled';
    throw new CoreError('INVALID_PARAMS', `${what} is not a valid JSON Schema: ${reason}`, {
      details: { reason: 'invalid_schema', field: what },
    });
  }
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
  cache.set(key, v);
  return v;
}

/**
 * Tool parameters and the output schema must describe an object: OpenAI (function parameters,
 * `response_format`), Anthropic (`input_schema`, also behind its structured output) and Google
 * (function parameters) refuse any other root, which would reach the client as an upstream
 * failure after the call began. A root without `type` is sent as an object (objectRoot).
 */
function assertObjectRoot(schema: Record<string, unknown>, what: string): void {
  if (schema.type === undefined || schema.type === 'object') return;
  throw new CoreError('INVALID_PARAMS', `${what} must describe an object (type: "object"); wrap other values in a property`, {
    details: { reason: 'invalid_schema', field: what },
  });
}

/** The schema as sent upstream: a root without `type` gets `type: "object"` (Anthropic requires it). */
export function objectRoot(schema: Record<string, unknown>): Record<string, unknown> {
  return schema.type === undefined ? { type: 'object', ...schema } : schema;
}

/** Keywords OpenAI's strict structured outputs refuse (its "supported schemas" page). */
const NOT_STRICT = [
  'minLength',
  'maxLength',
  'minProperties',
  'maxProperties',
  'patternProperties',
  'unevaluatedProperties',
  'propertyNames',
  'uniqueItems',
  'contains',
  'if',
  'not',
  'dependentRequired',
  'dependentSchemas',
];

/**
 * Whether OpenAI (and OpenRouter) may take `schema` in strict mode: every object closes with
 * `additionalProperties: false` and requires all its properties, and no refused keyword is used.
 * The AI SDK asks for strict mode by default, and OpenAI answers any other schema with a 400,
 * which the client would see as an upstream failure; such schemas go non-strict instead, and
 * the answer is validated here either way.
 */
export function isStrictSchema(schema: unknown): boolean {
  if (Array.isArray(schema)) return schema.every(isStrictSchema);
  if (typeof schema !== 'object' || schema === null) return true;
  const s = schema as Record<string, unknown>;
  if (NOT_STRICT.some((k) => k in s)) return false;
  if (s.type === 'object' || (Array.isArray(s.type) && s.type.includes('object')) || s.properties !== undefined) {
    const keys = Object.keys((s.properties as object | undefined) ?? {});
    const required = Array.isArray(s.required) ? s.required : [];
    if (s.additionalProperties !== false || !keys.every((k) => required.includes(k))) return false;
  }
  return Object.entries(s).every(([k, v]) =>
    k === 'enum' || k === 'const' || k === 'default' || k === 'examples' ? true : isStrictSchema(v),
  );
}

/**
 * The request's schemas and tool choice, checked before any upstream call or charge: the output
 * schema and every tool's parameters compile, tool names are unique, and a tool choice names a
 * declared tool. Otherwise the provider (or the AI SDK) refuses it after the call began, which
 * a client would see as an upstream failure.
 */
export async function assertValidCallSchemas(input: {
  tools?: Array<{ name: string; parameters: Record<string, unknown> }> | undefined;
  toolChoice?: string | { type: 'tool'; toolName: string } | undefined;
  output?: { schema: Record<string, unknown> } | undefined;
}): Promise<void> {
  if (input.output) {
    await validator(input.output.schema);
    assertObjectRoot(input.output.schema, 'output.schema');
  }
  const tools = input.tools ?? [];
  const names = new Set<string>();
  for (const [i, t] of tools.entries()) {
    if (names.has(t.name))
      throw new CoreError('INVALID_PARAMS', `tool name "${t.name}" is declared twice`, {
        details: { reason: 'invalid_tools', field: `tools.${i}.name` },
      });
    names.add(t.name);
    await validator(t.parameters, `tools.${i}.parameters`);
    assertObjectRoot(t.parameters, `tools.${i}.parameters`);
  }
  const choice = input.toolChoice;
  // The AI SDK drops a tool choice when no tools are sent: "required" would quietly become a text answer.
  if (choice === 'required' && tools.length === 0) {
    throw new CoreError('INVALID_PARAMS', 'toolChoice "required" needs at least one tool in tools', {
      details: { reason: 'invalid_tools', field: 'toolChoice' },
    });
  }
  if (typeof choice === 'object' && !names.has(choice.toolName)) {
    throw new CoreError('INVALID_PARAMS', `toolChoice names "${choice.toolName}", which is not among the declared tools`, {
      details: { reason: 'invalid_tools', field: 'toolChoice' },
    });
  }
}

/**
 * Parse the model's answer as JSON and validate it against the request's schema (the AI SDK's
 * `jsonSchema()` does not validate). Returns the object or a reason it is not one.
 */
export async function parseOutput(
  text: string,
  schema: Record<string, unknown>,
): Promise<{ ok: true; value: unknown } | { ok: false; reason: string }> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'the model did not answer with JSON' };
  }
  const v = await validator(schema);
  let valid: boolean;
  try {
    valid = v(value) as boolean;
  } catch (err) {
    // A recursive schema (a tree of `$ref: "#"` under `items`) follows the answer's nesting: an
    // answer nested deeply enough overflows the stack. It is not an answer that matches.
    if (err instanceof RangeError) return { ok: false, reason: 'the answer is nested too deeply to check against the schema' };
    throw err;
  }
  if (valid) return { ok: true, value };
  const e = v.errors?.[0];
  return { ok: false, reason: `the answer does not match the schema${e ? `: ${e.instancePath || '/'} ${e.message ?? ''}` : ''}` };
}
