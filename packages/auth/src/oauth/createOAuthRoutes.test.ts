import { ConfigError, createRuntime, MemoryStorage, resolveConfig } from '@ai-backend/core/internal';
import { describe, expect, it } from 'vitest';
import { memoryLogger } from './__tests__/harness.js';
import { createOAuthRoutes } from './createOAuthRoutes.js';

describe('createOAuthRoutes', () => {
  it('refuses to start without encryptionKey, provider client id and provider', async () => {
    const runtime = await createRuntime(resolveConfig({ storage: { type: 'memory' } }), { logger: memoryLogger() });
    try {
      createOAuthRoutes(runtime);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).problems.map((p) => p.path)).toEqual(['oauth.encryptionKey', 'oauth.providerClientId', 'oauth.provider']);
    }
    await runtime.close();
  });

  it("refuses policy 'token' without a strong initial access token", async () => {
    const config = resolveConfig({
      storage: { type: 'memory' },
      oauth: {
        encryptionKey: 'k'.repeat(32),
        providerClientId: 'x',
        provider: { preset: 'google' },
        registration: { policy: 'token', initialAccessToken: 'short' },
      },
    });
    const runtime = await createRuntime(config, { storage: new MemoryStorage(), logger: memoryLogger() });
    expect(() => createOAuthRoutes(runtime)).toThrow(/initialAccessToken/);
    await runtime.close();
  });

  it('answers 503 temporarily_unavailable when session storage fails, and builds challenges', async () => {
    const storage = new MemoryStorage();
    const config = resolveConfig({
      storage: { type: 'memory' },
      oauth: { encryptionKey: 'k'.repeat(32), providerClientId: 'x', provider: { preset: 'github' } },
    });
    const runtime = await createRuntime(config, { storage, logger: memoryLogger() });
    const oauth = createOAuthRoutes(runtime);
    await oauth.ready();
    const { CoreError } = await import('@ai-backend/core');
    storage.get = async () => {
      throw new CoreError('UNAVAILABLE', 'redis down');
    };
    const res = await oauth.app.request('http://h.test/oauth/authorize?client_id=x');
    expect(res.status).toBe(503);
    expect((await res.json()).error).toBe('temporarily_unavailable');
    expect(oauth.challenge(new Request('http://h.test/mcp'), { error: 'invalid_token' })).toBe(
      'Bearer resource_metadata="http://h.test/.well-known/oauth-protected-resource/mcp", error="invalid_token"',
    );
    await oauth.close();
    await runtime.close();
  });
});
