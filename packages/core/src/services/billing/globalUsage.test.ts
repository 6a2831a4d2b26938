import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { GLOBAL_SHARDS, shardOf } from './globalUsage.js';

const expected = (userId: string) => createHash('sha1').update(userId).digest().readUInt32BE(0) % GLOBAL_SHARDS;

describe('shardOf', () => {
  it('gives every user its SHA-1 shard, on first and repeated lookups and past the cache bound', () => {
    const ids = Array.from({ length: 12_000 }, (_, i) => `user-${i}`);
    for (const id of ids) expect(shardOf(id)).toBe(expected(id));
    for (const id of ids.slice(0, 500)) expect(shardOf(id)).toBe(expected(id));
    expect(new Set(ids.map(shardOf)).size).toBe(GLOBAL_SHARDS);
  });
});
