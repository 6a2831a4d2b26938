import { describe, expect, it } from 'vitest';
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import { CoreError, createLogger } from '@ai-backend/core/internal';
import { resourceNotFound, toMcpError } from './mcpErrors.js';

const logs: string[] = [];
const logger = createLogger('warn', (l) => logs.push(l));

type Wire = Error & { code: number; data?: Record<string, unknown> };

describe('mcpErrors', () => {
  it('resourceNotFound is -32602 with the URI in data (SEP-2164), the URI bounded', () => {
    const e = resourceNotFound('memo://x'.padEnd(5000, 'x'));
    expect(e).toBeInstanceOf(ProtocolError);
    expect(e.code).toBe(ProtocolErrorCode.InvalidParams);
    expect((e.data as { uri: string }).uri).toHaveLength(2048);
  });

  it('a CoreError keeps its table code, message, appCode, details and Retry-After', () => {
    const e = toMcpError(
      logger,
      new CoreError('PAYMENT_REQUIRED', 'not enough tokens', { details: { needed: 5 }, headers: { 'Retry-After': '7' } }),
      'prompts/get',
    ) as Wire;
    expect(e.message).toBe('not enough tokens');
    expect(e.code).toBe(-32002);
    expect(e.data).toMatchObject({ appCode: 'PAYMENT_REQUIRED', details: { needed: 5 } });
    expect(JSON.stringify(e.data)).toContain('7');
  });

  it('NOT_FOUND of a named prompt or resource is -32602 with the uri, not the procedure code', () => {
    const e = toMcpError(logger, new CoreError('NOT_FOUND', 'no such resource'), 'resources/read', 'memo://gone') as Wire;
    expect(e.code).toBe(ProtocolErrorCode.InvalidParams);
    expect(e.data).toMatchObject({ uri: 'memo://gone' });
  });

  it('passes a ProtocolError through untouched', () => {
    const p = new ProtocolError(ProtocolErrorCode.InvalidRequest, 'x');
    expect(toMcpError(logger, p, 'x')).toBe(p);
  });

  it('an unexpected error: a generic message to the client, the detail logged', () => {
    logs.length = 0;
    const e = toMcpError(logger, new Error('db down at postgres://admin:hunter2@10.0.0.5/prod'), 'completion/complete') as Wire;
    expect(e.code).toBe(-32603);
    expect(JSON.stringify({ m: e.message, d: e.data })).not.toMatch(/hunter2|postgres/);
    expect(logs.join('\n')).toContain('completion/complete');
  });
});
