import { describe, expect, it } from 'vitest';
import { JSONRPC_CODE_BY_TRPC, JSONRPC_STANDARD } from '@ai-backend/core/internal';
import { edgeError } from './edgeError.js';

const read = async (res: Response) => ({ status: res.status, type: res.headers.get('content-type'), body: (await res.json()) as any });

describe('edgeError: one refusal in the shape each route family parses', () => {
  it('jsonrpc: 400 is a parse error, 413 and 415 invalid requests, 403 and 429 their tRPC-mapped codes, id null', async () => {
    expect((await read(edgeError('jsonrpc', 400, 'bad'))).body).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: JSONRPC_STANDARD.PARSE_ERROR, message: 'bad' },
    });
    expect((await read(edgeError('jsonrpc', 413, 'big'))).body.error.code).toBe(JSONRPC_STANDARD.INVALID_REQUEST);
    expect((await read(edgeError('jsonrpc', 415, 'type'))).body.error.code).toBe(JSONRPC_STANDARD.INVALID_REQUEST);
    expect((await read(edgeError('jsonrpc', 408, 'slow'))).body.error.code).toBe(JSONRPC_STANDARD.INVALID_REQUEST);
    expect((await read(edgeError('jsonrpc', 403, 'no'))).body.error.code).toBe(JSONRPC_CODE_BY_TRPC.FORBIDDEN);
    expect((await read(edgeError('jsonrpc', 429, 'later'))).body.error.code).toBe(JSONRPC_CODE_BY_TRPC.TOO_MANY_REQUESTS);
    // The standard codes and the tRPC-mapped ones must not collide, or a client could not tell them apart.
    expect(JSONRPC_CODE_BY_TRPC.FORBIDDEN).not.toBe(JSONRPC_STANDARD.INVALID_REQUEST);
  });

  it('trpc: the superjson envelope @trpc/client reads, with code and httpStatus', async () => {
    const r = await read(edgeError('trpc', 413, 'request body exceeds 10 bytes'));
    expect(r.status).toBe(413);
    expect(r.body).toEqual({
      error: {
        json: {
          message: 'request body exceeds 10 bytes',
          code: JSONRPC_CODE_BY_TRPC.PAYLOAD_TOO_LARGE,
          data: { code: 'PAYLOAD_TOO_LARGE', httpStatus: 413 },
        },
      },
    });
    expect((await read(edgeError('trpc', 408, 'x'))).body.error.json.data.code).toBe('TIMEOUT');
    expect((await read(edgeError('trpc', 415, 'x'))).body.error.json.data.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('openai: error.type per status and a lower-case code', async () => {
    expect((await read(edgeError('openai', 403, 'no'))).body).toEqual({
      error: { message: 'no', type: 'permission_error', param: null, code: 'forbidden' },
    });
    expect((await read(edgeError('openai', 429, 'x'))).body.error).toMatchObject({ type: 'rate_limit_error', code: 'too_many_requests' });
    expect((await read(edgeError('openai', 413, 'x'))).body.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'payload_too_large',
    });
  });

  it('oauth: RFC 6749 error and error_description; plain: { error }', async () => {
    expect((await read(edgeError('oauth', 403, 'origin'))).body).toEqual({ error: 'access_denied', error_description: 'origin' });
    expect((await read(edgeError('oauth', 400, 'bad'))).body).toEqual({ error: 'invalid_request', error_description: 'bad' });
    expect((await read(edgeError('plain', 415, 'type'))).body).toEqual({ error: 'type' });
  });

  it('always JSON, with the status given and extra headers kept', async () => {
    const res = edgeError('jsonrpc', 429, 'later', { 'Retry-After': '5' });
    expect(res.status).toBe(429);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('retry-after')).toBe('5');
  });
});
