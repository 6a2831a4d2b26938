import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintDevToken } from '@ai-backend/auth';
import { createLogger, createStorage, resolveConfig, runtimeOfServices, type ConfigInput } from '@ai-backend/core/internal';
import { dropTestKeys, testRedis } from '@ai-backend/test-utils/services';
import { waitFor } from '@ai-backend/test-utils';
import { createServer } from '@ai-backend/transports';
import { startApiKeyMcp, type UpstreamMcp } from './helpers/oauthUpstream.js';

/**
 * After an upgrade, no credential of a server added at run time stays in clear in the store
 * (docs/mcp-gateway.md): a record as versions before sealing wrote it (the server's headers in
 * plaintext in `gateway:servers`) is put into a real store, SQLite file and Redis; a server
 * started on it seals it in place, its bytes no longer hold the secret, the server still reaches
 * the upstream with it, and no log line, answer or file carries it.
 */
const redisAt = await testRedis();
const JWT_SECRET = 'e2e-reseal-jwt-secret-0123456789abcdef012345';
const VAULT_KEY = 'e2e-reseal-vault-master-key-0123456789abcdef';
const SECRET = 'ak-team-PLAINTEXT-SECRET-5d0c9e7a41b2';
const CLIENT_SECRET = 'oauth-PLAINTEXT-client-secret-93b1f0';

let upstream: UpstreamMcp;
beforeAll(async () => {
  upstream = await startApiKeyMcp({ [SECRET]: 'team' });
});
afterAll(async () => {
  await upstream?.close();
});

/** The record as a version before sealing wrote it: the config as the schema parsed it, headers and client secret in clear. */
const legacyRecord = () => ({
  version: 'written-before-sealing',
  servers: {
    team: {
      type: 'http',
      url: upstream.url,
      headers: { 'x-api-key': SECRET },
      allowPrivateNetwork: false,
      oauth: { clientId: 'team-app', clientSecret: CLIENT_SECRET },
      enabled: true,
      perUser: false,
      tools: { deny: [] },
      expose: 'tools',
      pricing: { tokensPerCall: 0, tools: {} },
      timeoutMs: 30_000,
    },
  },
});

interface Store {
  name: string;
  skip: boolean;
  storage: () => Promise<NonNullable<ConfigInput>['storage']>;
  /** Every byte the store holds for this test, as text. */
  bytes: () => Promise<string>;
  cleanup: () => Promise<void>;
}

let dir = '';
const keyPrefix = `e2e-reseal-${randomUUID()}:`;
const stores: Store[] = [
  {
    name: 'SQLite file',
    skip: false,
    storage: async () => {
      dir = await mkdtemp(join(tmpdir(), 'gw-reseal-'));
      return { type: 'sqlite', dir };
    },
    bytes: async () => {
      const files: string[] = [];
      for (const e of await readdir(dir, { withFileTypes: true, recursive: true }))
        if (e.isFile()) files.push(await readFile(join(e.parentPath, e.name), 'latin1'));
      return files.join('\n');
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  },
  {
    name: 'Redis',
    skip: !redisAt.ok,
    storage: async () => ({ type: 'redis', redis: { host: redisAt.host, port: redisAt.port, keyPrefix } }),
    bytes: async () => {
      const { Redis } = await import('ioredis');
      const client = new Redis({ host: redisAt.host, port: redisAt.port, lazyConnect: true });
      await client.connect();
      try {
        const keys = await client.keys(`${keyPrefix}*`);
        const values = await Promise.all(keys.map(async (k) => ((await client.type(k)) === 'string' ? client.get(k) : '')));
        return values.join('\n');
      } finally {
        client.disconnect();
      }
    },
    cleanup: async () => {
      await dropTestKeys(redisAt, keyPrefix);
    },
  },
];

for (const store of stores) {
  describe.skipIf(store.skip)(`a server stored in clear before sealing, ${store.name}`, () => {
    afterAll(() => store.cleanup());

    it('is sealed in place at start, still reached with its credentials, and its secret is in no log line or answer', async () => {
      const config: ConfigInput = {
        port: 0,
        host: '127.0.0.1',
        mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: false } },
        jwt: { secret: JWT_SECRET },
        billing: { vaultKey: VAULT_KEY },
        storage: await store.storage(),
        gateway: { allowPrivateNetwork: true },
      };
      // The old way: the record straight into the store, as StoredServers wrote it before sealing.
      const before = await createStorage(resolveConfig(config).storage);
      await before.set('gateway:servers', legacyRecord());
      await before.close();
      expect(await store.bytes()).toContain(SECRET);
      expect(await store.bytes()).toContain(CLIENT_SECRET);

      const logs: string[] = [];
      const server = createServer(config, { logger: createLogger('debug', (l) => logs.push(l)) });
      const base = (await server.start()).url.replace(/\/$/, '');
      try {
        const runtime = runtimeOfServices(await server.ready());
        const raw = async () => JSON.stringify(await runtime.storage.get('gateway:servers'));
        await waitFor(async () => ((await raw()).includes('"sealed"') ? true : undefined), { what: 'the record sealed' });
        expect(await raw()).not.toContain(SECRET);
        expect(await raw()).not.toContain(CLIENT_SECRET);
        expect(await raw()).toContain(upstream.url);
        // Served as it was stored: headers and client secret put back from the sealed part.
        expect(runtime.gateway.serverConfig('team')).toMatchObject({
          headers: { 'x-api-key': SECRET },
          oauth: { clientId: 'team-app', clientSecret: CLIENT_SECRET },
        });

        const res = await fetch(`${base}/rpc`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${await mintDevToken({ secret: JWT_SECRET, sub: 'reseal-admin', scopes: ['mcp'] })}`,
          },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'gateway.callTool',
            params: { server: 'team', tool: 'whoami', arguments: {} },
          }),
        });
        const answer = await res.text();
        expect(JSON.parse(answer).result.content[0].text).toBe('key:team');
        expect(answer).not.toContain(SECRET);
        expect(upstream.refused).toBe(0);
      } finally {
        await server.stop();
      }
      // Stopped: what is left on disk or in Redis holds the credentials sealed only.
      const left = await store.bytes();
      expect(left).not.toContain(SECRET);
      expect(left).not.toContain(CLIENT_SECRET);
      expect(logs.join('\n')).toContain('sealed the credentials of servers stored in clear');
      for (const secret of [SECRET, CLIENT_SECRET]) expect(logs.join('\n')).not.toContain(secret);
    });
  });
}
