import { createServer as createTcpServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropTestSchema, testPostgres, testPostgresOptions } from '@ai-backend/test-utils/services';
import {
  callVia,
  createTestUpstream,
  creditTokens,
  startAiServer,
  tokenFor,
  type AiServer,
  type Entry,
  type TestUpstream,
} from './helpers/aiGateway.js';

/**
 * A PostgreSQL outage seen from every entry point: the server reaches PostgreSQL through a TCP
 * proxy of ours, which the test cuts (connections refused, open ones reset) and restores on the
 * same port. While it is cut, every entry point answers 503 / -32053 within one second; once it
 * is back, the same server answers again without a restart.
 */
const target = await testPostgres();

class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  async start(): Promise<void> {
    this.server = createTcpServer((client) => {
      const upstream = connect(target.port, target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  async cut(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server!.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    await closed;
  }
}

const ENTRIES: Entry[] = ['rpc', 'trpc', 'mcp'];

describe.skipIf(!target.ok)('PostgreSQL outage', () => {
  let upstream: TestUpstream;
  let gw: AiServer;
  let proxy: TcpProxy;
  let token: string;
  const pg = testPostgresOptions(target, 'outage');
  const sub = 'outage-pg-user';

  beforeAll(async () => {
    upstream = await createTestUpstream();
    proxy = new TcpProxy();
    await proxy.start();
    gw = await startAiServer(upstream, {
      storage: {
        type: 'postgres',
        postgres: {
          host: '127.0.0.1',
          port: proxy.port,
          user: pg.user,
          database: pg.database,
          schema: pg.schema,
          ...(target.password ? { password: target.password } : {}),
        },
      },
    });
    token = await tokenFor(sub);
    await creditTokens(gw.url, await tokenFor('outage-admin', { admin: true }), sub, 5000, 'outage-pg-1');
  });
  afterAll(async () => {
    await gw?.stop();
    await upstream?.close();
    await dropTestSchema(target, pg.schema);
  });

  it('every entry point answers 503 / -32053 within 1 s while PostgreSQL is unreachable, then recovers without a restart', async () => {
    for (const entry of ENTRIES) expect((await callVia(gw, entry, token, 'billing.getTokenBalance')).ok).toBe(true);

    await proxy.cut();
    for (const entry of ENTRIES) {
      const started = performance.now();
      const r = await callVia(gw, entry, token, 'billing.getTokenBalance');
      const ms = performance.now() - started;
      expect(r.ok, entry).toBe(false);
      if (!r.ok) expect(r.code, entry).toMatch(/SERVICE_UNAVAILABLE|-32053/);
      expect(ms, `${entry} answered in ${Math.round(ms)} ms`).toBeLessThan(1000);
    }
    const ready = await fetch(`${gw.url}/health/ready`);
    expect(ready.status).toBe(503);
    // A metered call is refused before any upstream request.
    const before = upstream.requests.length;
    const call = await callVia(gw, 'rpc', token, 'ai.generateText', {
      content: 'during the outage',
      systemPrompt: 's',
      provider: 'openai',
      options: { maxTokens: 10 },
    });
    expect(call.ok).toBe(false);
    expect(upstream.requests.length).toBe(before);

    await proxy.start(); // same port
    for (const entry of ENTRIES) {
      const r = await callVia(gw, entry, token, 'billing.getTokenBalance');
      expect(r.ok, entry).toBe(true);
      if (r.ok) expect(r.data.virtualTokenBalance).toBe(5000);
    }
    expect((await fetch(`${gw.url}/health/ready`)).status).toBe(200);
    const after = await callVia(gw, 'rpc', token, 'ai.generateText', {
      content: 'after the outage',
      systemPrompt: 's',
      provider: 'openai',
      options: { maxTokens: 10 },
    });
    expect(after.ok).toBe(true);
    expect((await gw.runtime.billing.ledger.audit(sub)).consistent).toBe(true);
  }, 60_000);
});
