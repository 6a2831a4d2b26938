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

describe('validateOutput: a schema that refers to itself in place is refused before any call', () => {
  const loops: Array<[string, Record<string, unknown>]> = [
    ['$ref to the root', { $ref: '#' }],
    ['an empty-fragment $ref inside allOf', { type: 'object', allOf: [{ $ref: '#' }] }],
    [
      'two $defs referring to each other',
      { $ref: '#/$defs/a', $defs: { a: { $ref: '#/$defs/b' }, b: { anyOf: [{ $ref: '#/$defs/a' }] } } },
    ],
    ['a loop under a property', { type: 'object', properties: { x: { $ref: '#/properties/x' } } }],
    ['a loop through not / if / else', { type: 'object', if: { not: { else: { $ref: '#' } } } }],
    ['a loop through an $id', { $id: 'https://example.com/s', type: 'object', oneOf: [{ $ref: 'https://example.com/s' }] }],
    [
      'a loop through an $anchor',
      { type: 'object', $defs: { n: { $anchor: 'node', allOf: [{ $ref: '#node' }] } }, properties: { a: { $ref: '#node' } } },
    ],
    [
      'a loop through definitions and an escaped pointer',
      { definitions: { 'a/b': { $ref: '#/definitions/a~1b' } }, $ref: '#/definitions/a~1b' },
    ],
  ];
  it.each(loops)('%s: INVALID_PARAMS naming the schema (output and tool parameters)', async (_, schema) => {
    await expect(assertValidCallSchemas({ output: { schema } })).rejects.toMatchObject({
      appCode: 'INVALID_PARAMS',
      message: expect.stringMatching(/^output\.schema refers to itself/),
      details: { reason: 'invalid_schema', field: 'output.schema' },
    });
    await expect(assertValidCallSchemas({ tools: [{ name: 't', parameters: schema }] })).rejects.toMatchObject({
      appCode: 'INVALID_PARAMS',
      details: { field: 'tools.0.parameters' },
    });
  });

  it('recursive schemas that descend into the value (trees, linked lists) and $ref-shaped data pass', async () => {
    const tree = { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#' } } } };
    const list = {
      type: 'object',
      $defs: { node: { type: 'object', properties: { next: { $ref: '#/$defs/node' } } } },
      properties: { head: { $ref: '#/$defs/node' } },
    };
    const data = { type: 'object', properties: { x: { default: { $ref: '#' }, const: { allOf: [{ $ref: '#' }] } } } };
    for (const schema of [tree, list, data]) await assertValidCallSchemas({ output: { schema } });
    expect(await parseOutput('{"name":"a","children":[{"name":"b","children":[]}]}', tree)).toMatchObject({ ok: true });
  });

  it('an answer nested deeper than the stack against a recursive schema is a failed validation, not a crash', async () => {
    const schema = { type: 'object', properties: { c: { $ref: '#' } } };
    const deep = '{"c":'.repeat(200_000) + '{}' + '}'.repeat(200_000);
    expect(await parseOutput(deep, schema)).toEqual({ ok: false, reason: expect.stringMatching(/nested too deeply/) });
  });
});
