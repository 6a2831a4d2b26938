import type { ValidateFunction } from 'ajv';
import { CoreError } from '../../errors/CoreError.js';

type AjvInstance = { compile(schema: object): ValidateFunction };
let ajv: Promise<AjvInstance> | undefined;
/** Compiled validators by schema text; bounded so varied client schemas cannot grow memory. */
const cache = new Map<string, ValidateFunction>();
const CACHE_MAX = 200;

async function validator(schema: Record<string, unknown>): Promise<ValidateFunction> {
  const key = JSON.stringify(schema);
  let v = cache.get(key);
  if (v) return v;
  ajv ??= import('ajv').then((m) => {
    const Ajv = (m.default as unknown as { default?: unknown }).default ?? m.default;
    return new (Ajv as new (o: object) => AjvInstance)({ allErrors: false, strict: false });
  });
  try {
    v = (await ajv).compile(schema);
  } catch (err) {
    throw new CoreError('INVALID_PARAMS', `output.schema is not a valid JSON Schema: ${err instanceof Error ? err.message.slice(0, 200) : 'invalid'}`);
  }
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
  cache.set(key, v);
  return v;
}

/** Check a schema compiles (before any upstream call or charge). */
export async function assertValidSchema(schema: Record<string, unknown>): Promise<void> {
  await validator(schema);
}

/**
 * Parse the model's answer as JSON and validate it against the request's schema (the AI SDK's
 * `jsonSchema()` does not validate). Returns the object or a reason it is not one.
 */
export async function parseOutput(text: string, schema: Record<string, unknown>): Promise<{ ok: true; value: unknown } | { ok: false; reason: string }> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'the model did not answer with JSON' };
  }
  const v = await validator(schema);
  if (v(value)) return { ok: true, value };
  const e = v.errors?.[0];
  return { ok: false, reason: `the answer does not match the schema${e ? `: ${e.instancePath || '/'} ${e.message ?? ''}` : ''}` };
}
