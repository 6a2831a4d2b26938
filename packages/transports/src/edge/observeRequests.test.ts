import { describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import { createRuntime, MemoryStorage, resolveConfig } from '@ai-backend/core/internal';
import { entryOf, observeRequests } from './observeRequests.js';

describe('entryOf: the closed set of entry-point labels', () => {
  it.each([
    ['/trpc/mcp.echo', 'trpc'],
    ['/typedrpc/a.b', 'trpc'],
    ['/rpc', 'rpc'],
    ['/mcp', 'mcp'],
    ['/v1/chat/completions', 'openai'],
    ['/v1/messages', 'anthropic'],
    ['/v1/messages/count_tokens', 'anthropic'],
    ['/oauth/token', 'oauth'],
    ['/register', 'oauth'],
    ['/.well-known/oauth-authorization-server', 'oauth'],
    ['/openrpc.json', 'api_description'],
    ['/openapi.json', 'api_description'],
    ['/health', 'health'],
    ['/health/ready', 'health'],
    ['/metrics', 'metrics'],
    ['/webhooks/lemonsqueezy', 'webhook'],
  ])('%s → %s', (path, entry) => {
    expect(entryOf(path)).toBe(entry);
  });

  it('collapses everything else to other (a path never becomes a label)', () => {
    for (const path of ['/', '/trpc', '/rpc/x', '/mcp/x', '/v1', '/healthz', '/metrics/x', '/' + 'a'.repeat(500)])
      expect(entryOf(path), path).toBe('other');
  });
});

describe('observeRequests', () => {
  it('passes the answer through unchanged, before and after the runtime is ready, and on errors', async () => {
    const app = new Hono();
    app.use(
      '*',
      observeRequests(() => undefined),
    );
    app.get('/rpc', (c) => c.text('ok', 201));
    app.get('/boom', () => {
      throw new Error('boom');
    });
    app.onError((_err, c) => c.text('failed', 500));
    const res = await app.request('/rpc', { headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } });
    expect(res.status).toBe(201);
    expect(await res.text()).toBe('ok');
    expect((await app.request('/boom')).status).toBe(500);
  });

  it('counts each request by entry point and status class once the runtime is ready', async () => {
    const runtime = await createRuntime(resolveConfig({ metrics: { enabled: true }, monitoring: { logging: { level: 'silent' } } }), {
      storage: new MemoryStorage(),
    });
    try {
      let ready = false;
      const app = new Hono();
      app.use(
        '*',
        observeRequests(() => (ready ? runtime : undefined)),
      );
      app.all('*', (c) => c.text('', c.req.path === '/rpc' ? 200 : 404));
      await app.request('/rpc'); // before ready: served, not counted
      ready = true;
      await app.request('/rpc');
      await app.request('/rpc');
      await app.request('/nowhere/secret-token-in-path');
      const { body } = await runtime.metrics!.exposition();
      const line = (entry: string, cls: string) =>
        body.split('\n').find((l) => !l.startsWith('#') && l.includes(`entry="${entry}"`) && l.includes(`"${cls}"`));
      expect(line('rpc', '2xx')).toMatch(/ 2$/);
      expect(line('other', '4xx')).toMatch(/ 1$/);
      expect(body).not.toContain('secret-token');
    } finally {
      await runtime.close();
    }
  });
});
