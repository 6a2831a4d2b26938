/**
 * Files in server workspaces as MCP resources (`workspace://<id>/<path>`): reads go through
 * the workspaces service's guard, and with enableWatching a change to a file reaches
 * subscribed clients as notifications/resources/updated.
 */
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@ai-backend/test-utils';
import { startTestServer, type TestServer } from './helpers/testServer.js';

let dir: string;
let outside: string;
let srv: TestServer;
let client: Client;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mcp-ws-'));
  outside = await mkdtemp(join(tmpdir(), 'mcp-outside-'));
  await writeFile(join(dir, 'notes.md'), '# v1');
  await writeFile(join(dir, 'pixel.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47]));
  await writeFile(join(outside, 'secret.txt'), 'top secret');
  await symlink(join(outside, 'secret.txt'), join(dir, 'link.txt'));
  srv = await startTestServer({
    mcp: { auth: { authType: 'none' } },
    serverWorkspaces: { docs: { path: dir, enableWatching: true } },
  });
  const rt = await srv.server.ready();
  for (const [uri, name] of [
    ['workspace://docs/notes.md', 'notes'],
    ['workspace://docs/pixel.png', 'pixel'],
    ['workspace://docs/link.txt', 'symlink out'],
    ['workspace://docs/%2e%2e/' + encodeURIComponent(outside.split('/').pop()!) + '/secret.txt', 'traversal'],
  ])
    rt.resources.register({ uri: uri!, name: name! });
  client = new Client({ name: 'ws', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`)));
});

afterAll(async () => {
  await client?.close();
  await srv?.stop();
  await rm(dir, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

describe('workspace:// resources', () => {
  it('reads text and binary files inside the workspace', async () => {
    expect((await client.readResource({ uri: 'workspace://docs/notes.md' })).contents[0]).toMatchObject({ text: '# v1' });
    const png = (await client.readResource({ uri: 'workspace://docs/pixel.png' })).contents[0] as { blob?: string; mimeType?: string };
    expect(png.mimeType).toBe('image/png');
    expect(Buffer.from(png.blob!, 'base64')).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
  });

  it('the guard refuses a symlink out of the workspace and an encoded traversal, even when registered', async () => {
    const rt = await srv.server.ready();
    for (const r of rt.resources.list().filter((x) => x.name === 'symlink out' || x.name === 'traversal')) {
      const err = await client.readResource({ uri: r.uri }).then(
        () => null,
        (e: Error) => e,
      );
      expect(err, r.uri).not.toBeNull();
      expect(err!.message).not.toContain('top secret');
      expect(err!.message).toMatch(/access denied|not found/i);
    }
  });

  it('a change to a watched file notifies subscribers of its URI', async () => {
    const updates: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
    await client.subscribeResource({ uri: 'workspace://docs/notes.md' });
    // The watcher and the GET stream come up a moment after the subscription: write again until a
    // change is reported (every write is the same change).
    await waitFor(
      async () => {
        await writeFile(join(dir, 'notes.md'), '# v2');
        return updates.includes('workspace://docs/notes.md');
      },
      { intervalMs: 100, what: 'an update notification for notes.md' },
    );
    expect((await client.readResource({ uri: 'workspace://docs/notes.md' })).contents[0]).toMatchObject({ text: '# v2' });
  });
});
