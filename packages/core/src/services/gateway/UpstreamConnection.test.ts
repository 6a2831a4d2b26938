import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { mcpServerSchema } from '../../config/sections/mcpServers.js';
import { createLogger } from '../../kernel/Logger.js';
import { UpstreamConnection, type ListKind } from './UpstreamConnection.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/**
 * A stdio server that crashes right after it has served its handshake and one tools/list: a
 * shared connection respawns it every 250 ms (the first step of the backoff, as each connect
 * succeeds) for as long as the gateway runs.
 */
const CRASH_AFTER_LIST = `
let buf = '';
const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\\n');
process.stdin.on('data', (d) => {
  buf += d;
  for (let i; (i = buf.indexOf('\\n')) >= 0; ) {
    const m = JSON.parse(buf.slice(0, i));
    buf = buf.slice(i + 1);
    if (m.method === 'initialize')
      send({ id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'crashy', version: '1' } } });
    if (m.method === 'tools/list') {
      send({ id: m.id, result: { tools: [{ name: 'echo', inputSchema: { type: 'object' } }] } });
      setTimeout(() => process.exit(1), 20);
    }
  }
});`;

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

describe('UpstreamConnection: a crash-looping stdio server', () => {
  it('respawns keep nothing of the dead attempts and announce no list change when the lists are the same', async () => {
    const changes: Array<ListKind | undefined> = [];
    const connection = new UpstreamConnection({
      name: 'crashy',
      server: mcpServerSchema().parse({ command: process.execPath, args: ['-e', CRASH_AFTER_LIST], timeoutMs: 5000 }),
      headers: {},
      logger: createLogger('silent'),
      maxResultBytes: 1 << 20,
      onChange: (kind) => changes.push(kind),
      reconnect: 'eager',
    });
    // Each attempt's SDK client, held weakly: what a dead attempt leaves reachable shows here.
    const clients: Array<WeakRef<object>> = [];
    const pids = new Set<number>();
    const clientOf = () => (connection as unknown as { opened?: { client: object } }).opened?.client;
    await connection.ready();
    const attempts = 6;
    await vi.waitFor(
      () => {
        const pid = connection.pid;
        const client = clientOf();
        if (pid && client && !pids.has(pid)) {
          pids.add(pid);
          clients.push(new WeakRef(client));
        }
        expect(pids.size).toBeGreaterThanOrEqual(attempts);
      },
      { timeout: 20_000, interval: 10 },
    );
    await connection.close();
    // The first connect listed the tool; the respawns listed the same and said nothing. Before,
    // every respawn announced all three lists: each live MCP session was sent three list_changed
    // per crash, kept in its event store for replay (about 0.3 KB a crash a session) and relisted.
    expect(changes).toEqual(['tools']);
    // Every attempt's client is garbage once its process died (the last one once closed).
    await vi.waitFor(
      () => {
        for (let i = 0; i < 4; i++) gc();
        expect(clients.filter((c) => c.deref() !== undefined)).toHaveLength(0);
      },
      { timeout: 10_000, interval: 100 },
    );
  }, 30_000);
});
