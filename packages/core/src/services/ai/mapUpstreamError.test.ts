import { APICallError, RetryError } from 'ai';
import { describe, expect, it } from 'vitest';
import { mapUpstreamError } from './mapUpstreamError.js';

const ctx = { provider: 'openai' as const, timedOut: false, timeoutMs: 1000, cancelled: false };
const apiError = (
  statusCode: number | undefined,
  responseHeaders?: Record<string, string>,
  extra: Partial<ConstructorParameters<typeof APICallError>[0]> = {},
) =>
  new APICallError({
    message: 'upstream said: sk-secret and the system prompt',
    url: 'http://x',
    requestBodyValues: { system: 'SECRET' },
    statusCode,
    responseHeaders,
    responseBody: 'SECRET BODY',
    ...extra,
  });

describe('mapUpstreamError', () => {
  it('reads Retry-After as seconds, as an HTTP date, and retry-after-ms', async () => {
    expect((await mapUpstreamError(apiError(429, { 'retry-after': '12' }), ctx)).headers).toEqual({ 'Retry-After': '12' });
    expect((await mapUpstreamError(apiError(429, { 'retry-after-ms': '1500' }), ctx)).headers).toEqual({ 'Retry-After': '2' });
    const date = new Date(Date.now() + 30_000).toUTCString();
    const s = Number((await mapUpstreamError(apiError(429, { 'retry-after': date }), ctx)).headers?.['Retry-After']);
    expect(s).toBeGreaterThanOrEqual(28);
    expect(s).toBeLessThanOrEqual(31);
    expect((await mapUpstreamError(apiError(429, { 'retry-after': 'soon' }), ctx)).headers).toBeUndefined();
  });

  it('believes at most an hour of Retry-After, however far the upstream puts it', async () => {
    const far = new Date(Date.now() + 5 * 365 * 86_400_000).toUTCString();
    const farOff: Array<Record<string, string>> = [{ 'retry-after': '1000000000' }, { 'retry-after': far }, { 'retry-after-ms': '9e15' }];
    for (const headers of farOff) {
      const err = await mapUpstreamError(apiError(429, headers), ctx);
      expect(err.headers).toEqual({ 'Retry-After': '3600' });
      expect(err.details?.retryAfterSeconds).toBe(3600);
    }
  });

  it('never carries the upstream message, body or request', async () => {
    for (const status of [undefined, 200, 400, 401, 429, 500]) {
      const e = await mapUpstreamError(apiError(status), ctx);
      expect(JSON.stringify({ m: e.message, d: e.details, h: e.headers })).not.toMatch(/secret|SECRET/);
      expect(e.cause).toBeUndefined();
    }
  });

  it('unwraps RetryError to the last attempt', async () => {
    const err = new RetryError({
      message: 'x',
      reason: 'maxRetriesExceeded',
      errors: [apiError(500), apiError(429, { 'retry-after': '3' })],
    });
    expect((await mapUpstreamError(err, ctx)).appCode).toBe('RATE_LIMITED');
  });

  it('our own timeout and the client abort win over whatever the SDK threw', async () => {
    expect((await mapUpstreamError(new Error('aborted'), { ...ctx, timedOut: true })).appCode).toBe('UPSTREAM_TIMEOUT');
    expect((await mapUpstreamError(new Error('aborted'), { ...ctx, cancelled: true, timedOut: true })).appCode).toBe('CANCELLED');
    expect((await mapUpstreamError(new Error('anything'), ctx)).details).toMatchObject({ reason: 'upstream_failed' });
  });
});
