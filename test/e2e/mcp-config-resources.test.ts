/**
 * MCP resources without code (`config.resources`): fixed resources and templates on
 * `workspace://` and `https://`/`http://`, and each server workspace's files as a template.
 * Seen alike on MCP (official SDK client), mcp.getResources / mcp.readResource over /rpc;
 * workspace reads go through the workspace guard and system.readFile's access rules, web reads
 * through the SSRF-guarded fetch.
 */
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, resolveConfig, type ConfigInput } from '@ai-backend/core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc, startTestServer, type TestServer } from './helpers/testServer.js';

let dir: string;
let outside: string;
let upstream: Server;
let web = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cfg-res-'));
  outside = await mkdtemp(join(tmpdir(), 'cfg-res-out-'));
  await writeFile(join(dir, 'README.md'), '# Project');
  await mkdir(join(dir, 'guides'));
  await writeFile(join(dir, 'guides', 'setup.md'), 'setup steps');
  await writeFile(join(dir, 'logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47]));
  await writeFile(join(dir, '.env'), 'SECRET=1');
  await writeFile(join(outside, 'secret.txt'), 'top secret');
  await symlink(join(outside, 'secret.txt'), join(dir, 'link.txt'));
  upstream = createHttpServer((req, res) => {
    if (req.url === '/doc.md') return res.writeHead(200, { 'content-type': 'text/markdown' }).end('# Remote doc');
    const item = /^\/items\/([^/]+)$/.exec(req.url ?? '');
    if (item) return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: decodeURIComponent(item[1]!) }));
    if (req.url === '/big') return res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(4096));
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  web = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((r) => upstream.close(() => r()));
  await rm(dir, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

function configFor(extra: ConfigInput = {}): ConfigInput {
  return {
    mcp: { auth: { authType: 'none' } },
    serverWorkspaces: { docs: { path: dir, name: 'Docs', readOnly: true, blockedPaths: ['**/.env'] } },
    resources: {
      list: [
        { uri: 'workspace://docs/README.md', name: 'readme', title: 'Project README', mimeType: 'text/markdown', category: 'docs' },
        { uri: `${web}/doc.md`, name: 'remote-doc', mimeType: 'text/markdown', category: 'web' },
        { uri: `${web}/big`, name: 'too-big' },
      ],
      templates: [
        { uriTemplate: `${web}/items/{id}`, name: 'item', mimeType: 'application/json' },
        { uriTemplate: 'workspace://docs/guides/{name}', name: 'guide', mimeType: 'text/markdown' },
      ],
      // The upstream is on loopback: allowed here only (last test: refused by default).
      fetch: { allowPrivateNetwork: true, maxBytes: 2048 },
    },
    ...extra,
  };
}

describe('config resources over MCP and mcp.getResources', () => {
  let srv: TestServer;
  let client: Client;
  beforeAll(async () => {
    srv = await startTestServer(configFor());
    client = new Client({ name: 'cfg-res', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`)));
  });
  afterAll(async () => {
    await client?.close();
    await srv?.stop();
  });

  it('resources/list and resources/templates/list show the config entries and the workspace files template', async () => {
    const { resources } = await client.listResources();
    expect(resources).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ uri: 'workspace://docs/README.md', name: 'readme', title: 'Project README', mimeType: 'text/markdown' }),
        expect.objectContaining({ uri: `${web}/doc.md`, name: 'remote-doc', mimeType: 'text/markdown' }),
      ]),
    );
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(
      expect.arrayContaining([`${web}/items/{id}`, 'workspace://docs/guides/{name}', 'workspace://docs/{+path}']),
    );
  });

  it('reads workspace files (text and binary) and web resources, fixed and from templates', async () => {
    expect((await client.readResource({ uri: 'workspace://docs/README.md' })).contents[0]).toMatchObject({
      text: '# Project',
      mimeType: 'text/markdown',
    });
    expect((await client.readResource({ uri: 'workspace://docs/guides/setup.md' })).contents[0]).toMatchObject({ text: 'setup steps' });
    const png = (await client.readResource({ uri: 'workspace://docs/logo.png' })).contents[0] as { blob?: string; mimeType?: string };
    expect(png.mimeType).toBe('image/png');
    expect(Buffer.from(png.blob!, 'base64')).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
    expect((await client.readResource({ uri: `${web}/doc.md` })).contents[0]).toMatchObject({
      text: '# Remote doc',
      mimeType: 'text/markdown',
    });
    expect(JSON.parse(((await client.readResource({ uri: `${web}/items/42` })).contents[0] as { text: string }).text)).toEqual({
      id: '42',
    });
  });

  it('the workspace guard refuses blocked files, symlinks out and traversal; web reads are bounded in size', async () => {
    for (const uri of [
      'workspace://docs/.env',
      'workspace://docs/link.txt',
      'workspace://docs/%2e%2e/secret.txt',
      'workspace://docs/guides/..%2F.env',
      'workspace://docs/../etc/passwd',
    ]) {
      await expect(client.readResource({ uri }), uri).rejects.toThrow();
    }
    await expect(client.readResource({ uri: `${web}/big` })).rejects.toThrow(/larger than 2048 bytes/);
    // A URI no entry and no template covers is never fetched.
    await expect(client.readResource({ uri: `${web}/other` })).rejects.toThrow(/not found/i);
  });

  it('mcp.getResources and mcp.readResource (JSON-RPC) see the same registry', async () => {
    const list = (await (await srv.fetch('/rpc', rpc('mcp.getResources', {}))).json()) as {
      result: { resources: string[]; total: number };
    };
    expect(list.result.resources).toEqual(expect.arrayContaining(['workspace://docs/README.md', `${web}/doc.md`]));
    const docs = (await (await srv.fetch('/rpc', rpc('mcp.getResources', { category: 'docs' }))).json()) as {
      result: { resources: string[] };
    };
    expect(docs.result.resources).toEqual(['workspace://docs/README.md']);
    const read = (await (await srv.fetch('/rpc', rpc('mcp.readResource', { uri: 'workspace://docs/guides/setup.md' }))).json()) as {
      result: { content: string; mimeType: string };
    };
    expect(read.result).toMatchObject({ content: 'setup steps', mimeType: 'text/markdown' });
  });
});

describe('config resources: access rules and secure defaults', () => {
  it('workspace reads follow system.readFile rules: anonymous callers get the sign-in challenge when auth is on', async () => {
    const srv = await startTestServer(configFor({ mcp: { auth: { authType: 'jwt' } }, jwt: { secret: 's'.repeat(40) } }));
    try {
      const post = (body: unknown) =>
        srv.fetch('/mcp', {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-protocol-version': '2025-06-18',
          },
          body: JSON.stringify(body),
        });
      const init = await post({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      });
      expect(init.status).toBe(200);
      const session = init.headers.get('mcp-session-id');
      const read = (uri: string) =>
        srv.fetch('/mcp', {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-protocol-version': '2025-06-18',
            ...(session ? { 'mcp-session-id': session } : {}),
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri } }),
        });
      const ws = await read('workspace://docs/README.md');
      expect(ws.status).toBe(401);
      expect(ws.headers.get('www-authenticate')).toContain('resource_metadata=');
      // A web resource the operator published is readable like any public resource.
      expect((await read(`${web}/doc.md`)).status).toBe(200);
    } finally {
      await srv.stop();
    }
  });

  it('web resources on loopback or private addresses are refused unless allowed', async () => {
    const srv = await startTestServer(configFor({ resources: { list: [{ uri: `${web}/doc.md`, name: 'remote-doc' }] } }));
    const client = new Client({ name: 'cfg-res-ssrf', version: '1.0.0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`)));
      await expect(client.readResource({ uri: `${web}/doc.md` })).rejects.toThrow(/non-public/);
    } finally {
      await client.close();
      await srv.stop();
    }
  });

  it('bad entries are config errors naming the key', () => {
    const bad: Array<[ConfigInput, RegExp]> = [
      [
        { serverWorkspaces: { docs: { path: dir } }, resources: { list: [{ uri: 'workspace://nope/README.md', name: 'x' }] } },
        /resources\.list\.0\.uri.*no server workspace "nope"/s,
      ],
      [{ resources: { list: [{ uri: 'ftp://example.com/a', name: 'x' }] } }, /scheme "ftp" has no handler/],
      [{ resources: { list: [{ uri: 'https://user:pass@example.com/a', name: 'x' }] } }, /must not contain credentials/],
      [{ resources: { list: [{ uri: 'https://example.com/a', name: '' }] } }, /resources\.list\.0\.name/],
      [{ resources: { list: [{ uri: 'https://example.com/a', name: 'x', mimeType: 'markdown' }] } }, /MIME type/],
      [{ resources: { templates: [{ uriTemplate: 'https://{host}/a/{b}', name: 'x' }] } }, /must be literal/],
      [{ resources: { templates: [{ uriTemplate: 'https://example.com/a', name: 'x' }] } }, /at least one \{variable\}/],
    ];
    for (const [input, message] of bad) {
      let err: unknown;
      try {
        resolveConfig(input);
      } catch (e) {
        err = e;
      }
      expect(err, String(message)).toBeInstanceOf(ConfigError);
      expect(
        String((err as Error).message) + JSON.stringify((err as ConfigError & { problems?: unknown }).problems ?? ''),
        String(message),
      ).toMatch(message);
    }
  });
});
