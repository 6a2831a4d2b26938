import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoreError } from '../../kernel/CoreError.js';
import { createHttpSchemeHandlers } from './httpSchemeHandler.js';
import { ResourceRegistry } from './ResourceRegistry.js';
import { compileUriTemplate } from '../../lib/uriTemplate.js';

describe('compileUriTemplate', () => {
  it('matches {var} within one segment and {+var} across segments, decoding values', () => {
    const t = compileUriTemplate('test://template/{id}/data');
    expect(t.variables).toEqual(['id']);
    expect(t.match('test://template/123/data')).toEqual({ id: '123' });
    expect(t.match('test://template/a%20b/data')).toEqual({ id: 'a b' });
    expect(t.match('test://template/1/2/data')).toBeNull();
    expect(t.match('test://template/123/data?x')).toBeNull();
    expect(t.match('test://template/%E0%A4%A/data')).toBeNull(); // malformed escape
    const plus = compileUriTemplate('repo://{owner}/{+path}');
    expect(plus.match('repo://ann/src/a.ts')).toEqual({ owner: 'ann', path: 'src/a.ts' });
    expect(plus.expand({ owner: 'a b', path: 'x/y z' })).toBe('repo://a%20b/x/y%20z');
  });

  it('refuses values that would step out of the template once resolved: dot segments, encoded slashes and backslashes', () => {
    const one = compileUriTemplate('https://host/items/{id}');
    for (const id of [
      '..',
      '.',
      '%2e%2e',
      '%2E%2E',
      '.%2e',
      '%2e.',
      '%2e',
      '..%2F',
      '%2F',
      '%2f',
      'a%2Fb',
      '%5C',
      '%5c..',
      'a%5cb',
      '\\',
      '%252e%252e',
      '%252F',
      '%255C',
      '%00',
      'a%00b',
    ]) {
      expect(one.match(`https://host/items/${id}`), id).toBeNull();
    }
    // Dots inside a value are fine; only whole dot segments move the path.
    expect(one.match('https://host/items/v1.2')).toEqual({ id: 'v1.2' });
    expect(one.match('https://host/items/...')).toEqual({ id: '...' });
    const many = compileUriTemplate('https://host/files/{+path}');
    for (const path of [
      '..',
      'a/..',
      'a/../../b',
      './a',
      'a/./b',
      'a/%2e%2e/b',
      '%2e%2e/x',
      'a%2F..%2Fb',
      'a%2fb',
      'a%5C..%5Cb',
      'a\\..\\b',
      'a/%252e%252e/b',
    ]) {
      expect(many.match(`https://host/files/${path}`), path).toBeNull();
    }
    expect(many.match('https://host/files/src/a.b/c.ts')).toEqual({ path: 'src/a.b/c.ts' });
  });

  it('escapes regex characters in the literal parts', () => {
    expect(compileUriTemplate('a.b://{x}').match('aXb://1')).toBeNull();
  });
});

describe('ResourceRegistry', () => {
  it('reads registered resources and template matches only; anything else is NOT_FOUND', async () => {
    const reg = new ResourceRegistry();
    let listChanges = 0;
    reg.onListChanged(() => listChanges++);
    reg.register({ uri: 'memo://a', name: 'a', read: () => ({ content: 'A', mimeType: 'text/plain' }) });
    reg.registerTemplate({
      uriTemplate: 'item://{id}',
      name: 'item',
      read: (_uri, v) => ({ content: `item ${v.id}`, mimeType: 'text/plain' }),
    });
    expect(listChanges).toBe(2);
    expect(await reg.read('memo://a')).toEqual({ uri: 'memo://a', content: 'A', mimeType: 'text/plain' });
    expect((await reg.read('item://7')).content).toBe('item 7');
    await expect(reg.read('memo://b')).rejects.toMatchObject({ appCode: 'NOT_FOUND' });
    await expect(reg.read('https://example.com/')).rejects.toBeInstanceOf(CoreError);
    expect(reg.unregister('item://{id}')).toBe(true);
    await expect(reg.read('item://7')).rejects.toMatchObject({ appCode: 'NOT_FOUND' });
  });

  it('routes registered URIs without inline content to the scheme handler', async () => {
    const reg = new ResourceRegistry();
    const seen: string[] = [];
    reg.registerScheme({ scheme: 'sftp', read: async (u) => (seen.push(u.href), { content: 'remote', mimeType: 'text/plain' }) });
    reg.register({ uri: 'sftp://host/file.txt', name: 'f' });
    reg.register({ uri: 'smb://host/share', name: 's' });
    expect((await reg.read('sftp://host/file.txt')).content).toBe('remote');
    expect(seen).toEqual(['sftp://host/file.txt']);
    await expect(reg.read('smb://host/share')).rejects.toMatchObject({ appCode: 'NOT_FOUND' });
  });

  it('notifyUpdated reaches listeners until they unsubscribe', () => {
    const reg = new ResourceRegistry();
    const got: string[] = [];
    const off = reg.onUpdated((u) => got.push(u));
    reg.notifyUpdated('memo://a');
    off();
    reg.notifyUpdated('memo://b');
    expect(got).toEqual(['memo://a']);
  });
});

describe('http(s) scheme handler', () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/text') return res.writeHead(200, { 'content-type': 'text/markdown; charset=utf-8' }).end('# hi');
      if (req.url === '/bin') return res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.from([1, 2, 3]));
      if (req.url === '/big') return res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(2048));
      if (req.url === '/redirect') return res.writeHead(302, { location: 'http://169.254.169.254/' }).end();
      // A slow upstream on purpose: the handler's timeout must cut it.
      if (req.url === '/slow') return void setTimeout(() => res.end('late'), 2000);
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  // The upstream is on loopback: allowed here, refused by default (last test).
  const http = (opts = {}) => createHttpSchemeHandlers({ allowPrivateNetwork: true, ...opts })[0]!;

  it('text as text, binary as base64', async () => {
    expect(await http().read(new URL(`${base}/text`))).toEqual({ content: '# hi', mimeType: 'text/markdown' });
    expect(await http().read(new URL(`${base}/bin`))).toEqual({ content: 'AQID', mimeType: 'image/png', blob: true });
  });

  it('refuses redirects, oversize bodies, slow upstreams and missing targets with codes', async () => {
    await expect(http().read(new URL(`${base}/redirect`))).rejects.toMatchObject({ appCode: 'UPSTREAM_ERROR' });
    await expect(http({ maxBytes: 1024 }).read(new URL(`${base}/big`))).rejects.toMatchObject({ appCode: 'PAYLOAD_TOO_LARGE' });
    await expect(http({ timeoutMs: 100 }).read(new URL(`${base}/slow`))).rejects.toMatchObject({ appCode: 'UPSTREAM_TIMEOUT' });
    await expect(http().read(new URL(`${base}/missing`))).rejects.toMatchObject({ appCode: 'NOT_FOUND' });
  });

  it('a cancelled request stops the fetch', async () => {
    const ac = new AbortController();
    const p = http().read(new URL(`${base}/slow`), ac.signal);
    ac.abort();
    await expect(p).rejects.toMatchObject({ appCode: 'CANCELLED' });
  });

  it('a template read never reaches a URI outside the template (`{id}` = `..` would read the host root)', async () => {
    const reg = new ResourceRegistry();
    reg.registerScheme(http());
    reg.registerTemplate({ uriTemplate: `${base}/items/{id}`, name: 'item', read: (uri) => reg.readThroughScheme(uri) });
    for (const id of ['..', '%2e%2e', '.%2E', '%2F..', '..%5Ctext']) {
      await expect(reg.read(`${base}/items/${id}`), id).rejects.toMatchObject({ appCode: 'NOT_FOUND' });
    }
    const files = new ResourceRegistry();
    files.registerScheme(http());
    files.registerTemplate({ uriTemplate: `${base}/items/{+path}`, name: 'files', read: (uri) => files.readThroughScheme(uri) });
    await expect(files.read(`${base}/items/../text`)).rejects.toMatchObject({ appCode: 'NOT_FOUND' });
    await expect(files.read(`${base}/items/x/%2e%2e/%2e%2e/text`)).rejects.toMatchObject({ appCode: 'NOT_FOUND' });
  });

  it('refuses loopback and private addresses by default (SSRF), by literal and by name', async () => {
    const guarded = createHttpSchemeHandlers()[0]!;
    await expect(guarded.read(new URL(`${base}/text`))).rejects.toMatchObject({
      appCode: 'FORBIDDEN',
      details: { reason: 'ssrf_blocked' },
    });
    await expect(guarded.read(new URL(base.replace('127.0.0.1', 'localhost') + '/text'))).rejects.toMatchObject({ appCode: 'FORBIDDEN' });
    await expect(guarded.read(new URL('http://169.254.169.254/latest/meta-data/'))).rejects.toMatchObject({ appCode: 'FORBIDDEN' });
  });
});
