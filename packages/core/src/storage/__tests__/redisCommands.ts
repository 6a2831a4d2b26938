import type { Redis } from 'ioredis';

/**
 * Every command Redis ran while `op` ran, by name and count (a script's own commands included),
 * from INFO commandstats: on a Redis of the test's own, so nothing else runs there.
 */
export async function commandsOf(client: Redis, op: () => Promise<unknown>): Promise<Record<string, number>> {
  await client.config('RESETSTAT');
  await op();
  const info = await client.info('commandstats');
  const counts: Record<string, number> = {};
  for (const [, name, calls] of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    // A script's first run is an EVAL, later ones EVALSHA: the same one command.
    const command = name === 'evalsha' ? 'eval' : name!;
    if (command !== 'config|resetstat' && command !== 'info') counts[command] = (counts[command] ?? 0) + Number(calls);
  }
  return counts;
}

/** `n` more unrelated keys under the store's prefix (closed holds, the bulk of a real store). */
export async function fillUnrelated(client: Redis, prefix: string, from: number, n: number): Promise<void> {
  for (let i = from; i < from + n; i += 1000) {
    const batch = client.pipeline();
    for (let j = i; j < Math.min(from + n, i + 1000); j++) batch.set(`${prefix}kv:holddone:user-${j}:hold`, '1');
    await batch.exec();
  }
}
