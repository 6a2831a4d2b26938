import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../storage/MemoryStorage.js';
import { Stats } from './Stats.js';

describe('Stats.flush', () => {
  it('asked for while a write is under way, it also writes what was counted after that write began', async () => {
    const storage = new MemoryStorage();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    // Hold the first write at its compare-and-set so a second flush is asked for meanwhile.
    const cas = storage.compareAndSet.bind(storage);
    let held = false;
    storage.compareAndSet = async (...args: Parameters<typeof cas>) => {
      if (!held) {
        held = true;
        await gate;
      }
      return cas(...args);
    };
    const stats = new Stats(storage);
    stats.record('rpc', 'mcp.echo', 3, false);
    const first = stats.flush();
    stats.record('rpc', 'mcp.echo', 4, false);
    const second = stats.flush();
    release();
    await second;
    // Read the store itself (a snapshot would flush again and hide a missed count).
    const [key] = await storage.keys('stats:');
    expect(await storage.get<{ count: number }>(key!)).toMatchObject({ count: 2 });
    await first;
  });
});
