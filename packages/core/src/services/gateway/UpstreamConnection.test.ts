import { afterEach, describe, expect, it, vi } from 'vitest';
import { mcpServerSchema } from '../../config/sections/mcpServers.js';
import { createLogger } from '../../kernel/Logger.js';
import { UpstreamConnection } from './UpstreamConnection.js';

afterEach(() => vi.useRealTimers());

describe('UpstreamConnection: a shared connection reconnects by itself', () => {
  it('the backoff timer retries even when it fires before retryAt by the wall clock (Node timers run on the loop clock)', async () => {
    const warnings: string[] = [];
    const connection = new UpstreamConnection({
      name: 'dies',
      // A stdio server that exits at once: every connect fails and starts the next backoff.
      server: mcpServerSchema().parse({ command: process.execPath, args: ['-e', 'process.exit(1)'], timeoutMs: 5000 }),
      headers: {},
      logger: createLogger('warn', (line) => warnings.push(line)),
      maxResultBytes: 1 << 20,
      onChange: () => undefined,
      reconnect: 'eager',
    });
    // Only setTimeout is faked, so the backoff timer can be fired while Date.now() is still before
    // retryAt, the way a timer scheduled from a stale loop clock fires.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    await expect(connection.ready()).rejects.toThrow(/MCP server "dies" is unavailable/);
    expect(connection.state).toMatchObject({ kind: 'failed', failures: 1 });
    const failures = () => (connection.state.kind === 'failed' ? connection.state.failures : 0);
    await vi.advanceTimersByTimeAsync(250);
    vi.useRealTimers();
    await vi.waitFor(() => expect(failures()).toBe(2), { timeout: 10_000 });
    expect(warnings.filter((l) => l.includes('MCP upstream unavailable'))).toHaveLength(2);
    await connection.close();
  });
});
