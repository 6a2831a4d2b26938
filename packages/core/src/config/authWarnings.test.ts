import { expect, it } from 'vitest';
import { createLogger } from '../kernel/Logger.js';
import { createRuntime } from '../createRuntime.js';
import { MemoryStorage } from '../storage/MemoryStorage.js';
import { jwtAudienceWarning, unusableAuthWarning } from './authWarnings.js';
import { resolveConfig } from './resolveConfig.js';

const SECRET = 's'.repeat(32);

it('warns at start-up when the configured auth mode cannot sign anybody in', async () => {
  const lines: string[] = [];
  const runtime = await createRuntime(resolveConfig({ storage: { type: 'memory' }, mcp: { auth: { authType: 'jwt' } } }), {
    storage: new MemoryStorage(),
    logger: createLogger('warn', (l) => lines.push(l)),
  });
  await runtime.close();
  const warning = lines.map((l) => JSON.parse(l) as { level: string; msg: string }).find((l) => l.msg.includes('nobody can sign in'));
  expect(warning?.level).toBe('warn');
  expect(warning?.msg).toContain('jwt.secret is not set');
});

it('names the missing pieces per auth type, and is silent when the mode is usable', () => {
  const warn = (input: Parameters<typeof resolveConfig>[0]) =>
    unusableAuthWarning(resolveConfig({ storage: { type: 'memory' }, ...input }));
  expect(warn({ mcp: { auth: { authType: 'oauth' } } })).toMatch(
    /'oauth' but OAuth is not configured \(missing: oauth\.encryptionKey, oauth\.providerClientId, oauth\.provider\)/,
  );
  expect(warn({ mcp: { auth: { authType: 'both' } } })).toMatch(/neither jwt\.secret nor OAuth/);
  expect(warn({ mcp: { auth: { authType: 'jwt' } }, jwt: { secret: SECRET } })).toBeUndefined();
  expect(warn({ mcp: { auth: { authType: 'both' } }, jwt: { secret: SECRET } })).toBeUndefined();
  expect(warn({ mcp: { auth: { authType: 'none' } } })).toBeUndefined();
});

it('warns when HS256 tokens of any audience are accepted on a server other machines reach', () => {
  const warn = (input: Parameters<typeof resolveConfig>[0]) =>
    jwtAudienceWarning(
      resolveConfig({ storage: { type: 'memory' }, mcp: { auth: { authType: 'jwt' } }, jwt: { secret: SECRET }, ...input }),
    );
  expect(warn({ host: '0.0.0.0' })).toMatch(/without jwt\.audience/);
  expect(warn({ host: '10.1.2.3', mcp: { auth: { authType: 'both' } } })).toMatch(/without jwt\.audience/);
  expect(warn({ host: '0.0.0.0', jwt: { secret: SECRET, audience: 'https://api.example.com/mcp' } })).toBeUndefined();
  expect(warn({ host: '127.0.0.1' })).toBeUndefined();
  // No secret: no HS256 token is verified at all.
  expect(warn({ host: '0.0.0.0', mcp: { auth: { authType: 'none' } }, jwt: {}, allowUnauthenticatedRemote: true })).toBeUndefined();
});
