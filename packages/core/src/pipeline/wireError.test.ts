import { TRPCError } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CoreError } from '../kernel/CoreError.js';
import { toJsonRpcError, toMcpToolError, toWireError } from './wireError.js';

describe('toWireError', () => {
  it('keeps a CoreError whole: message, appCode, details, headers, Retry-After in seconds', () => {
    const w = toWireError(new CoreError('RATE_LIMITED', 'too many', { details: { limit: 3 }, headers: { 'Retry-After': '9' } }));
    expect(w).toMatchObject({
      code: 'TOO_MANY_REQUESTS',
      appCode: 'RATE_LIMITED',
      message: 'too many',
      httpStatus: 429,
      jsonRpcCode: -32029,
      retryAfterSec: 9,
      internal: false,
    });
    expect(toJsonRpcError(w).data).toMatchObject({ appCode: 'RATE_LIMITED', details: { limit: 3 }, retryAfterSec: 9 });
    expect(toMcpToolError(w, { structuredContent: false })).not.toHaveProperty('structuredContent');
    expect(toMcpToolError(w, { structuredContent: true }).structuredContent).toMatchObject({ error: { appCode: 'RATE_LIMITED' } });
  });

  it('masks unexpected errors and messages taken from library errors', () => {
    expect(toWireError(new Error('ECONNREFUSED 10.0.0.5:5432'))).toMatchObject({
      message: 'internal error',
      internal: true,
      httpStatus: 500,
    });
    const parse = new TRPCError({ code: 'PARSE_ERROR', cause: new RangeError('Maximum call stack size exceeded') });
    expect(toWireError(parse).message).toBe('malformed request input');
    expect(toWireError(new TRPCError({ code: 'BAD_REQUEST', message: 'see https://trpc.io/docs/x' })).message).toBe(
      'invalid request input',
    );
    // A deliberate message of a custom procedure stays.
    expect(toWireError(new TRPCError({ code: 'CONFLICT', message: 'name taken', cause: new Error('unique violation') })).message).toBe(
      'name taken',
    );
  });

  it('invalid input: -32602 with zod issues', () => {
    const zod = z.object({ a: z.string() }).safeParse({}).error!;
    const w = toWireError(new TRPCError({ code: 'BAD_REQUEST', cause: zod }));
    expect(w).toMatchObject({ message: 'invalid input: a: Invalid input: expected string, received undefined', jsonRpcCode: -32602 });
    expect(w.issues).toHaveLength(1);
  });

  it('invalid input names where and what (MCP clients read only the text): the union branch that got furthest', () => {
    const input = z.object({ content: z.union([z.string(), z.array(z.object({ type: z.literal('tool-call'), input: z.unknown() }))]) });
    const zod = input.safeParse({ content: [{ type: 'tool-call' }] }).error!;
    expect(toWireError(new TRPCError({ code: 'BAD_REQUEST', cause: zod })).message).toBe(
      'invalid input: content.0.input: Invalid input: expected nonoptional, received undefined',
    );
    const refined = z
      .object({ a: z.string().optional() })
      .superRefine((_, ctx) => ctx.addIssue({ code: 'custom', message: 'send either a or b', path: ['a'] }));
    expect(toWireError(new TRPCError({ code: 'BAD_REQUEST', cause: refined.safeParse({}).error! })).message).toBe(
      'invalid input: a: send either a or b',
    );
  });
});
