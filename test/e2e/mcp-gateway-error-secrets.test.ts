/**
 * An upstream's errors are passed on to callers (docs/mcp-gateway.md, "Failure behaviour"), and
 * many upstreams quote the request in them ("rejected credentials: Bearer …"). The gateway sends
 * a shared server's configured headers on every user's behalf: whatever of them an upstream
 * echoes is cut from what callers, the status pages and the log see, on every entry point.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUpstream, mcpClient, rpcCall, startAiServer, tokenFor, type AiServer, type TestUpstream } from './helpers/aiGateway.js';
import { startTrickyUpstream, type TrickyUpstream } from './helpers/trickyMcpUpstream.js';
import { waitForUpstreams } from './helpers/mcpUpstreams.js';

const TEAM_KEY = 'sk-team-shared-key-0123456789abcdef';
const TEAM_HEADER = 'team-header-secret-9876543210';

let ai: TestUpstream;
let tricky: TrickyUpstream;
let gw: AiServer;
let user: string;

beforeAll(async () => {
  ai = await createTestUpstream();
  tricky = await startTrickyUpstream();
  gw = await startAiServer(ai, {
    mcp: { auth: { authType: 'jwt' } },
    gateway: { allowPrivateNetwork: true },
    mcpServers: {
      up: { type: 'http', url: tricky.url, timeoutMs: 10_000, headers: { Authorization: `Bearer ${TEAM_KEY}`, 'X-Api-Key': TEAM_HEADER } },
    },
  });
  user = await tokenFor('gw-error-secrets-user');
  await waitForUpstreams(gw.runtime);
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await tricky?.stop();
  await ai?.close();
});

const leaks = (text: string) => text.includes(TEAM_KEY) || text.includes(TEAM_HEADER);

describe("MCP gateway: an upstream's errors without the server's credentials", () => {
  for (const tool of ['leak-auth-error', 'leak-auth-http']) {
    it(`${tool}: /rpc and /mcp callers get the upstream's error with the credentials cut out`, async () => {
      const viaRpc = await rpcCall(gw.url, user, 'gateway.callTool', { server: 'up', tool, arguments: {} });
      expect(viaRpc.text).toContain('rejected credentials');
      expect(viaRpc.text).toContain('[redacted]');
      expect(leaks(viaRpc.text)).toBe(false);

      const client = await mcpClient(gw.url, user);
      try {
        const viaMcp = JSON.stringify(await client.callTool({ name: `up__${tool}`, arguments: {} }).catch((err: Error) => err.message));
        expect(viaMcp).toContain('[redacted]');
        expect(leaks(viaMcp)).toBe(false);
      } finally {
        await client.close();
      }
      const listed = await rpcCall(gw.url, user, 'gateway.listServers');
      expect(leaks(listed.text)).toBe(false);
      expect(leaks(JSON.stringify(gw.runtime.gateway.status()))).toBe(false);
      expect(gw.logs.filter(leaks)).toEqual([]);
    });
  }
});
