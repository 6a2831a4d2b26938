/**
 * Upstream resource templates and completions through the MCP gateway (docs/mcp-gateway.md,
 * "What clients see"), with server-everything over stdio: its templates
 * (`demo://resource/dynamic/text/{resourceId}`) appear in resources/templates/list, a URI they
 * match is read from it (it lists none of those resources: they are reached only through the
 * template), and completion/complete of its prompts and templates is answered by it, for the
 * 2025-11-25 (1.x SDK) and 2026-07-28 (v2 SDK) clients. The same rules as for its resources and
 * prompts apply: an API key limited to one of its tools gets none of it. Before, the templates
 * were missing, such a read was "resource not found" and completions "unknown prompt".
 */
import { randomUUID } from 'node:crypto';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUpstream, mcpClient, rpcCall, startAiServer, tokenFor, type AiServer, type TestUpstream } from './helpers/aiGateway.js';
import { EVERYTHING, waitForUpstreams } from './helpers/mcpUpstreams.js';

let upstream: TestUpstream;
let gw: AiServer;
let user: string;
const run = randomUUID().slice(0, 8);
const TEXT_TEMPLATE = 'demo://resource/dynamic/text/{resourceId}';

beforeAll(async () => {
  upstream = await createTestUpstream();
  gw = await startAiServer(upstream, {
    mcp: { auth: { authType: 'jwt' } },
    mcpServers: { every: { command: process.execPath, args: [EVERYTHING, 'stdio'], timeoutMs: 10_000 } },
  });
  user = await tokenFor(`gwtpl-${run}`);
  await waitForUpstreams(gw.runtime);
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
});

type AnyClient = Pick<ModernClient, 'listResourceTemplates' | 'readResource' | 'complete' | 'close'>;

async function clientFor(revision: '2025-11-25' | '2026-07-28', credential: string): Promise<AnyClient> {
  if (revision === '2025-11-25') return (await mcpClient(gw.url, credential)) as unknown as AnyClient;
  const client = new ModernClient({ name: 'gw-templates', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(
    new ModernTransport(new URL(`${gw.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${credential}` } } }),
  );
  return client;
}

/** What a credential gets of server-everything's templates and completions. */
async function reach(revision: '2025-11-25' | '2026-07-28', credential: string) {
  const client = await clientFor(revision, credential);
  try {
    const templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
    const read = await client.readResource({ uri: 'demo://resource/dynamic/text/7' }).then(
      (r) => (r.contents[0] as { text?: string }).text ?? '',
      (e: Error) => `refused: ${e.message}`,
    );
    const promptCompletion = await client
      .complete({ ref: { type: 'ref/prompt', name: 'every__completable-prompt' }, argument: { name: 'department', value: 'Eng' } })
      .then(
        (r) => r.completion.values,
        (e: Error) => `refused: ${e.message}`,
      );
    const templateCompletion = await client
      .complete({ ref: { type: 'ref/resource', uri: TEXT_TEMPLATE }, argument: { name: 'resourceId', value: '12' } })
      .then(
        (r) => r.completion.values,
        (e: Error) => `refused: ${e.message}`,
      );
    return { templates, read, promptCompletion, templateCompletion };
  } finally {
    await client.close();
  }
}

describe('MCP gateway: upstream resource templates and completions', () => {
  for (const revision of ['2025-11-25', '2026-07-28'] as const) {
    it(`${revision}: templates are listed, a URI they match is read from the upstream, completions are its own`, async () => {
      const got = await reach(revision, user);
      expect(got.templates).toEqual(expect.arrayContaining([TEXT_TEMPLATE, 'demo://resource/dynamic/blob/{resourceId}']));
      expect(got.read).toMatch(/^Resource 7: /);
      expect(got.promptCompletion).toEqual(['Engineering']);
      expect(got.templateCompletion).toEqual(['12']);
    });
  }

  it('a URI no upstream lists or templates is still not found', async () => {
    const client = await clientFor('2026-07-28', user);
    try {
      await expect(client.readResource({ uri: 'demo://resource/elsewhere/1' })).rejects.toThrow(/not found/i);
    } finally {
      await client.close();
    }
  });

  it('an API key limited to one upstream tool gets none of its templates, reads or completions', async () => {
    const made = await rpcCall<{ key: string }>(gw.url, user, 'keys.create', { name: 'echo only', tools: ['every__echo'] });
    const got = await reach('2025-11-25', made.result!.key);
    expect(got.templates).toEqual([]);
    expect(got.read).toMatch(/^refused: /);
    expect(got.promptCompletion).toMatch(/^refused: /);
    expect(got.templateCompletion).toMatch(/^refused: /);
  });

  it('a key admitting the whole server gets them', async () => {
    const made = await rpcCall<{ key: string }>(gw.url, user, 'keys.create', { name: 'whole server', tools: ['every__*'] });
    const got = await reach('2026-07-28', made.result!.key);
    expect(got.templates).toContain(TEXT_TEMPLATE);
    expect(got.read).toMatch(/^Resource 7: /);
    expect(got.templateCompletion).toEqual(['12']);
  });
});
