import { APICallError, RetryError } from 'ai';
import { describe, expect, it } from 'vitest';
import { mapUpstreamError, refusalFacts, refusesKey } from './mapUpstreamError.js';

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

  it("a refusal of the request answers the provider's status with its identifiers, never its message", async () => {
    const body = (error: unknown) => JSON.stringify({ error });
    const refused = (status: number, error: unknown) => mapUpstreamError(apiError(status, undefined, { responseBody: body(error) }), ctx);
    const tooLong = await refused(400, {
      message: 'SECRET prompt of 130000 tokens',
      type: 'invalid_request_error',
      param: 'messages',
      code: 'context_length_exceeded',
    });
    expect(tooLong.appCode).toBe('BAD_REQUEST');
    expect(tooLong.message).toBe('openai rejected the request (HTTP 400: context_length_exceeded)');
    expect(tooLong.details).toEqual({
      reason: 'upstream_rejected',
      provider: 'openai',
      status: 400,
      upstreamType: 'invalid_request_error',
      upstreamCode: 'context_length_exceeded',
      param: 'messages',
    });
    expect((await refused(422, { type: 'invalid_request_error' })).appCode).toBe('BAD_REQUEST');
    expect((await refused(413, { type: 'request_too_large' })).appCode).toBe('PAYLOAD_TOO_LARGE');
    // 404: the model's absence is the caller's; a path's (the operator's base URL) is ours.
    expect((await refused(404, { code: 'model_not_found' })).appCode).toBe('NOT_FOUND');
    // Anthropic, Google and llama.cpp say the same for a path they do not serve: the operator's base URL.
    expect((await refused(404, { type: 'not_found_error' })).appCode).toBe('UPSTREAM_ERROR');
    expect((await refused(404, { code: 404, status: 'NOT_FOUND' })).appCode).toBe('UPSTREAM_ERROR');
    // The platform's account, not the request: the operator's outage, not every caller's 400.
    for (const code of ['billing_hard_limit_reached', 'insufficient_quota', 'account_deactivated'])
      expect((await refused(400, { type: 'invalid_request_error', code })).appCode).toBe('UPSTREAM_ERROR');
    expect((await refused(404, { message: 'Invalid URL (POST /v1/x)' })).appCode).toBe('UPSTREAM_ERROR');
    expect((await mapUpstreamError(apiError(404), ctx)).appCode).toBe('UPSTREAM_ERROR');
    for (const status of [402, 405, 408, 409, 410, 415]) expect((await refused(status, { type: 'x' })).appCode).toBe('UPSTREAM_ERROR');
  });

  it("a 404 on the Responses API path: a Chat Completions server's (llama.cpp's not_found_error) gets the hint, OpenAI's missing model does not", async () => {
    const onResponses = { ...ctx, responsesApiSetting: 'ai.providers.openai.api' };
    const at = (error: unknown) =>
      mapUpstreamError(
        apiError(404, undefined, { url: 'http://127.0.0.1:8080/v1/responses', responseBody: JSON.stringify({ error }) }),
        onResponses,
      );
    // llama.cpp's answer to a path it does not serve.
    const llamaCpp = await at({ code: 404, message: 'File Not Found', type: 'not_found_error' });
    expect(llamaCpp.appCode).toBe('UPSTREAM_ERROR');
    expect(llamaCpp.message).toMatch(/does not serve the OpenAI Responses API.*ai\.providers\.openai\.api: 'chat'/);
    const missing = await at({ message: 'The model `x` does not exist', type: 'invalid_request_error', code: 'model_not_found' });
    expect(missing.appCode).toBe('NOT_FOUND');
  });

  it('takes only identifier-shaped words from a refusal body: a key or quoted text in any field is dropped', () => {
    const facts = (error: unknown) => refusalFacts(JSON.stringify({ error }));
    expect(facts({ code: 'sk-proj-abc123SECRET', type: 'AIzaSyD1SeCrEtKeY0123456789abcdefghij', param: 'SECRET text here' })).toEqual({});
    expect(facts({ code: 'invalid_value', type: 'INVALID_ARGUMENT', param: 'tools[0].function.name' })).toEqual({
      upstreamCode: 'invalid_value',
      upstreamType: 'INVALID_ARGUMENT',
      param: 'tools[0].function.name',
    });
    expect(facts({ code: 'a'.repeat(65) })).toEqual({});
    expect(refusalFacts(JSON.stringify({ type: 'invalid_request_error', code: 'bad_field' }))).toEqual({
      upstreamType: 'invalid_request_error',
      upstreamCode: 'bad_field',
    });
    expect(refusalFacts('not json')).toEqual({});
    expect(refusalFacts(undefined)).toEqual({});
    expect(refusalFacts(`{"error":{"code":"x"}}${' '.repeat(70_000)}`)).toEqual({});
  });

  it("Google's 400 naming API_KEY_INVALID in its details is a refused key; its other 400s are not", async () => {
    const google = (reason: string) =>
      JSON.stringify({
        error: { code: 400, message: 'API key not valid: SECRET', status: 'INVALID_ARGUMENT', details: [{ '@type': 'x', reason }] },
      });
    for (const reason of ['API_KEY_INVALID', 'API_KEY_EXPIRED']) {
      expect(refusesKey(google(reason))).toBe(true);
      const e = await mapUpstreamError(apiError(400, undefined, { responseBody: google(reason) }), { ...ctx, provider: 'google' });
      expect(e.appCode).toBe('UPSTREAM_ERROR');
      expect(e.details).toMatchObject({ reason: 'invalid_key', status: 400 });
    }
    expect(refusesKey(google('FIELD_INVALID'))).toBe(false);
    expect(refusesKey(JSON.stringify({ error: { message: 'API_KEY_INVALID' } }))).toBe(false);
    expect(refusesKey('API_KEY_INVALID {')).toBe(false);
    const e = await mapUpstreamError(apiError(400, undefined, { responseBody: google('FIELD_INVALID') }), { ...ctx, provider: 'google' });
    expect(e.appCode).toBe('BAD_REQUEST');
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
