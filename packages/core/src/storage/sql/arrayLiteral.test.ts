import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgres } from '@ai-backend/test-utils/services';
import { arrayLiteral } from './arrayLiteral.js';

const postgres = await testPostgres();

/** Texts an array literal must carry unchanged: JSON with escapes, quotes, backslashes, braces, control characters, surrogates. */
const TEXTS = [
  '',
  'plain',
  'NULL',
  'null',
  JSON.stringify({ a: 'q"uote', b: 'back\\slash', c: 'line\nbreak', d: '\u0000', e: ['x', { f: null }] }),
  '{"already":"json"}',
  '"',
  '\\',
  '\\"',
  '{,}',
  ' spaced ',
  'tab\there',
  'bell \u0007 unit \u001f', // (a NUL byte PostgreSQL refuses in any text, however sent)
  'emoji 🙂 pair',
  'lone \ud800 high',
  'lone \udfff low',
  'ünïcödé ẞ',
];

describe.skipIf(!postgres.ok)('arrayLiteral', () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = new pg.Client({
      host: postgres.host,
      port: postgres.port,
      user: postgres.user,
      password: postgres.password,
      database: postgres.database,
    });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
  });

  /** What PostgreSQL reads from `param` as `type`: the comparison is against pg's own encoding of the same array. */
  const read = async (type: string, param: unknown) => (await client.query<{ a: unknown }>(`SELECT $1::${type} AS a`, [param])).rows[0]!.a;

  it('PostgreSQL reads the same text[] from it as from pg encoding the array itself', async () => {
    // Each text alone (the JSON way or the element-by-element way, whichever it needs), then all together.
    for (const text of TEXTS)
      expect(await read('text[]', arrayLiteral([text, 'x', null]))).toEqual(await read('text[]', [text, 'x', null]));
    expect(await read('text[]', arrayLiteral(TEXTS))).toEqual(await read('text[]', TEXTS));
    expect(await read('text[]', arrayLiteral([]))).toEqual([]);
  });

  it('PostgreSQL reads the same bigint[], NULLs included, and refuses a non-finite number as it does from pg', async () => {
    const numbers = [0, -1, 1_764_000_000_000, Number.MAX_SAFE_INTEGER, null];
    expect(await read('bigint[]', arrayLiteral(numbers))).toEqual(await read('bigint[]', numbers));
    await expect(read('bigint[]', arrayLiteral([1, Number.NaN]))).rejects.toThrow(/invalid input syntax/);
    await expect(read('bigint[]', [1, Number.NaN])).rejects.toThrow(/invalid input syntax/);
  });

  it('is the text pg sends for the array, but for the case of NULL', () => {
    // Without a control character or a surrogate in any element: one JSON.stringify of the array.
    const plain = TEXTS.filter((t) => !/[\u0000-\u001f\ud800-\udfff]/.test(t));
    const pgText = (pg as unknown as { utils: { prepareValue(v: unknown): string } }).utils.prepareValue([...plain, null]);
    expect(arrayLiteral([...plain, null])).toBe(pgText.replace(/NULL}$/, 'null}'));
    expect(arrayLiteral(TEXTS)).toBe((pg as unknown as { utils: { prepareValue(v: unknown): string } }).utils.prepareValue(TEXTS));
  });
});
