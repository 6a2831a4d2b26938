import { describe, expect, it } from 'vitest';
import { createLogger } from '../../kernel/Logger.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import { expectCode } from './__tests__/testFs.js';
import {
  CLIENT_WORKSPACE_KEY,
  ClientWorkspaceService,
  MAX_CLIENT_WORKSPACES,
  sessionOwner,
  validateFileUri,
} from './ClientWorkspaceService.js';

const make = (storage = new MemoryStorage()) => new ClientWorkspaceService(storage, createLogger('silent'));

describe('validateFileUri', () => {
  it.each([
    ['file:///home/me/project', 'file:///home/me/project'],
    ['file://localhost/srv/x', 'file:///srv/x'],
    ['file:///C:/Users/me/code', 'file:///C:/Users/me/code'],
    ['file:///c%3A/Users/me', 'file:///c%3A/Users/me'],
    ['file:///home/me/my%20project/', 'file:///home/me/my%20project/'],
  ])('accepts %s', (uri, href) => {
    expect(validateFileUri(uri)).toBe(href);
  });

  it.each([
    'http://example.com/x',
    'https://host/file',
    'file://evil.example/share',
    'file:///home/me/../../etc',
    'file:///home/me/%2e%2e/etc',
    'file:///home/me/%252e%252e/etc',
    'file:///home/./me',
    'file:///home/me%00/x',
    'file:///home/me%5c..%5cx',
    'file:///home?x=1',
    'file:///home#frag',
    'file://user:pw@localhost/x',
    'file:///bad%zz',
    '/home/me',
    'not a uri',
    'file:///' + 'a'.repeat(3000),
  ])('refuses %s', (uri) => {
    expect(() => validateFileUri(uri)).toThrow(/file:\/\/ URI/);
  });
});

describe('ClientWorkspaceService', () => {
  it('keeps each owner’s registry separate and in storage', async () => {
    const storage = new MemoryStorage();
    const s = make(storage);
    expect(await s.register('sub:alice', { id: 'proj', uri: 'file:///home/alice/proj', name: 'Project' })).toEqual({
      success: true,
      id: 'proj',
      message: "client workspace 'proj' registered",
    });
    await s.register('sub:bob', { id: 'proj', uri: 'file:///home/bob/proj' });
    expect((await s.list('sub:alice')).map((w) => [w.id, w.uri, w.name, w.source])).toEqual([
      ['proj', 'file:///home/alice/proj', 'Project', 'registered'],
    ]);
    expect((await s.list('sub:bob'))[0]?.uri).toBe('file:///home/bob/proj');
    expect(await storage.get(CLIENT_WORKSPACE_KEY + 'sub%3Aalice:proj')).toMatchObject({ uri: 'file:///home/alice/proj' });
    // An owner whose name extends another's never sees its entries.
    expect(await s.list('sub:alice:x')).toEqual([]);
    await s.register('sub:alice:x', { id: 'other', uri: 'file:///o' });
    expect(await s.list('sub:alice')).toHaveLength(1);
    // A second service on the same storage (another server) sees the same registry.
    expect(await make(storage).list('sub:alice')).toHaveLength(1);
    await expectCode(s.unregister('sub:bob', 'other'), 'NOT_FOUND');
    await s.unregister('sub:alice', 'proj');
    expect(await s.list('sub:alice')).toEqual([]);
    expect(await s.list('sub:bob')).toHaveLength(1);
  });

  it('re-registering an id replaces it; ids and URIs are validated; the count is capped', async () => {
    const s = make();
    await s.register('anonymous', { id: 'a', uri: 'file:///one' });
    expect((await s.register('anonymous', { id: 'a', uri: 'file:///two' })).message).toContain('updated');
    expect((await s.list('anonymous')).map((w) => w.uri)).toEqual(['file:///two']);
    await expectCode(s.register('anonymous', { id: '__proto__', uri: 'file:///x' }), 'BAD_REQUEST');
    await expectCode(s.register('anonymous', { id: 'b', uri: 'file:///x/../y' }), 'BAD_REQUEST');
    for (let i = 1; i < MAX_CLIENT_WORKSPACES; i++) await s.register('anonymous', { id: `w${i}`, uri: `file:///w${i}` });
    await expectCode(s.register('anonymous', { id: 'one-too-many', uri: 'file:///z' }), 'BAD_REQUEST');
  });

  it('concurrent registrations by one owner are all kept', async () => {
    const s = make();
    await Promise.all(Array.from({ length: 20 }, (_, i) => s.register('sub:c', { id: `w${i}`, uri: `file:///w${i}` })));
    expect(await s.list('sub:c')).toHaveLength(20);
  });

  it('session roots appear for that session only, invalid ones dropped, cleared with the session', async () => {
    const s = make();
    await s.register('session:s1', { id: 'reg', uri: 'file:///registered' });
    expect(s.setSessionRoots('s1', [{ uri: 'file:///home/me/a', name: 'A' }, { uri: 'https://nope' }, { uri: 'file:///b' }])).toBe(2);
    const listed = await s.list('session:s1', 's1');
    expect(listed.map((w) => [w.id, w.uri, w.source])).toEqual([
      ['reg', 'file:///registered', 'registered'],
      ['root-1', 'file:///home/me/a', 'mcp-roots'],
      ['root-2', 'file:///b', 'mcp-roots'],
    ]);
    expect(await s.list('session:s2', 's2')).toEqual([]);
    s.setSessionRoots('s1', [{ uri: 'file:///c' }]);
    expect((await s.list('x', 's1')).map((w) => w.uri)).toEqual(['file:///c']);
    await s.clearSession('s1');
    expect(await s.list('x', 's1')).toEqual([]);
  });

  it('clearing a session deletes what it registered without an identity, and nothing of other owners', async () => {
    const storage = new MemoryStorage();
    const s = make(storage);
    await s.register(sessionOwner('s1'), { id: 'a', uri: 'file:///a' });
    await s.register(sessionOwner('s1'), { id: 'b', uri: 'file:///b' });
    await s.register(sessionOwner('s10'), { id: 'a', uri: 'file:///a' });
    await s.register('sub:u1', { id: 'a', uri: 'file:///a' });
    await s.register('anonymous', { id: 'a', uri: 'file:///a' });
    await s.clearSession('s1');
    expect(await s.list(sessionOwner('s1'))).toEqual([]);
    expect((await storage.keys(CLIENT_WORKSPACE_KEY)).sort()).toEqual([
      `${CLIENT_WORKSPACE_KEY}anonymous:a`,
      `${CLIENT_WORKSPACE_KEY}session%3As10:a`,
      `${CLIENT_WORKSPACE_KEY}sub%3Au1:a`,
    ]);
  });
});
