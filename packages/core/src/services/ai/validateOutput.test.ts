import { describe, expect, it } from 'vitest';
import { assertValidCallSchemas, parseOutput, safeRegExp } from './validateOutput.js';

describe('validateOutput: client patterns never run in exponential time on the server', () => {
  it('refuses a repeated group that itself repeats or alternates; plain patterns pass', () => {
    for (const p of ['^(a+)+$', '(a|aa)+', '^(\\w+\\s?)*$', '([a-z]+)*x', '((ab)*c)+', '(a{2,})+', '(?:x+y?)*'])
      expect(() => safeRegExp(p, 'u'), p).toThrow(/exponential/);
    for (const p of [
      '^[A-Z][a-z]+$',
      '^\\d{3}-\\d{4}$',
      '^(foo)?bar+$',
      '(ab)+',
      '[(a+)+]',
      '\\(a+\\)+',
      '^(\\+|-)?\\d+$',
      '^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$',
    ])
      expect(() => safeRegExp(p, 'u'), p).not.toThrow();
  });

  it('such a schema is INVALID_PARAMS before any call, so the answer is never matched against it', async () => {
    const schema = { type: 'object', properties: { a: { type: 'string', pattern: '^(a+)+$' } } };
    await expect(assertValidCallSchemas({ output: { schema } })).rejects.toMatchObject({
      appCode: 'INVALID_PARAMS',
      details: { reason: 'invalid_schema', field: 'output.schema' },
    });
    await expect(parseOutput(JSON.stringify({ a: `${'a'.repeat(40)}b` }), schema)).rejects.toThrow(/exponential/);
  });

  it('a safe pattern the answer does not match is a failed validation', async () => {
    const schema = { type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]{3}$' } }, required: ['code'] };
    await assertValidCallSchemas({ output: { schema } });
    expect(await parseOutput('{"code":"test"}', schema)).toEqual({
      ok: false,
      reason: expect.stringContaining('/code must match pattern'),
    });
    expect(await parseOutput('{"code":"ABC"}', schema)).toEqual({ ok: true, value: { code: 'ABC' } });
  });
});
