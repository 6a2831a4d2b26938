import { describe, expect, it } from 'vitest';
import { CoreError } from '../../kernel/CoreError.js';
import type { Identity } from '../../kernel/identity.js';
import { keyToolRefusal } from '../apiKeys/keyRules.js';
import { unknownTool } from '../gateway/upstreamTools.js';
import { keyRefusalEvent } from './keyRefusalEvent.js';

const key: Identity = { sub: 'owner', scopes: [], isAdmin: false, via: 'apiKey', apiKey: { id: 'key-1', tools: ['x__echo'] } };
const site = { transport: 'rpc', ip: '203.0.113.7', path: 'gateway.callTool' };

describe('keyRefusalEvent', () => {
  it('records a refusal answered as an unknown tool by the refusal it carries, and nothing for a tool that is not there', () => {
    expect(keyRefusalEvent(key, unknownTool('x__add', keyToolRefusal('x__add')), site)).toEqual({
      type: 'key_refused',
      reason: 'FORBIDDEN',
      message: 'this API key may not use x__add (its tools rule)',
      transport: 'rpc',
      ip: '203.0.113.7',
      sub: 'owner',
      path: 'gateway.callTool',
      detail: { keyId: 'key-1', rule: 'key_tool_not_allowed' },
    });
    expect(keyRefusalEvent(key, unknownTool('x__add'), site)).toBeUndefined();
  });

  it('a cause that is no key refusal, or a caller without a key, is no line', () => {
    const other = new CoreError('NOT_FOUND', 'unknown tool: x', {
      cause: new CoreError('FORBIDDEN', 'no', { details: { reason: 'other' } }),
    });
    expect(keyRefusalEvent(key, other, site)).toBeUndefined();
    const jwt: Identity = { sub: 'owner', scopes: [], isAdmin: false, via: 'jwt' };
    expect(keyRefusalEvent(jwt, unknownTool('x__add', keyToolRefusal('x__add')), site)).toBeUndefined();
  });
});
