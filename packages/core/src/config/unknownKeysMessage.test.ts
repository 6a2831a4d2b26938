import { describe, expect, it } from 'vitest';
import { checkConfig } from './resolveConfig.js';
import { closestKey } from './unknownKeysMessage.js';

const problems = (input: unknown) => {
  const r = checkConfig(input);
  return r.ok ? [] : r.problems;
};

describe('unknown config keys name the key they most likely misspell', () => {
  it.each([
    ['a root key, letters swapped', { prot: 9000 }, '', 'unknown key(s): prot (did you mean port?)'],
    ['a section key, a letter missing', { storage: { typ: 'memory' } }, 'storage', 'unknown key(s): typ (did you mean type?)'],
    [
      'a nested key, in the wrong case',
      { mcp: { auth: { authtype: 'none' } } },
      'mcp.auth',
      'unknown key(s): authtype (did you mean authType?)',
    ],
    [
      'a sub-section of a lazy section',
      { storage: { type: 'memory', sqlte: {} } },
      'storage',
      'unknown key(s): sqlte (did you mean sqlite?)',
    ],
    [
      'a key of a record entry (a workspace)',
      { serverWorkspaces: { docs: { path: '/tmp', readonly: true } } },
      'serverWorkspaces.docs',
      'unknown key(s): readonly (did you mean readOnly?)',
    ],
    [
      'a key of a provider, whose entries the section parses itself',
      { ai: { providers: { local: { type: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', defaultModel: 'm', baseURL: 'x' } } } },
      'ai.providers.local',
      'unknown key(s): baseURL (did you mean baseUrl?)',
    ],
    [
      'a key named like an Object.prototype member',
      { storage: { type: 'memory', constructor: 1 } },
      'storage',
      'unknown key(s): constructor',
    ],
    ['nothing close: no guess', { storage: { type: 'memory', zzzzzz: 1 } }, 'storage', 'unknown key(s): zzzzzz'],
  ])('%s', (_, input, path, message) => {
    const p = problems(input);
    expect(p).toContainEqual(expect.objectContaining({ path, message }));
    expect(p.find((x) => x.path === path)?.unknownKeys).toEqual([message.split(': ')[1]!.split(' ')[0]]);
  });

  it('several unknown keys in one object: each with its own guess', () => {
    expect(problems({ prot: 1, hots: 'x', whatever: true })).toContainEqual({
      path: '',
      message: 'unknown key(s): prot (did you mean port?), hots (did you mean host?), whatever',
      unknownKeys: ['prot', 'hots', 'whatever'],
    });
  });

  it('closestKey guesses only when close: one edit for short keys, two for longer ones', () => {
    expect(closestKey('prot', ['port', 'host'])).toBe('port');
    expect(closestKey('pt', ['port'])).toBeUndefined();
    expect(closestKey('encryptonKy', ['encryptionKey'])).toBe('encryptionKey');
    expect(closestKey('encrKey', ['encryptionKey'])).toBeUndefined();
    expect(closestKey('JWT', ['jwt'])).toBe('jwt');
  });
});
