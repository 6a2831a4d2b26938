import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { parseMarkers, type UpstreamFault } from './faults.js';
import { parseRequestExtras, planReply, type RequestExtras } from './replyPlan.js';
import { streamContentType, streamFrames } from './streamFormats.js';
import { errorBody, googleKeyRefusal, parsePrompt, replyBody, type WireFormat } from './wireFormats.js';
import { embeddingReply, parseEmbeddingRequest, type EmbeddingFormat } from './embeddings.js';
import { bodyWithUsage, framesWithUsage } from './usageFaults.js';

/** The four provider ids of core's config (`PROVIDER_IDS`), repeated so this package does not depend on core. */
export type ProviderId = 'anthropic' | 'openai' | 'google' | 'openrouter';
/** Wire formats a named provider may speak here (`namedBaseUrl`): any OpenAI-compatible server, or Mistral's. */
export type NamedWireFormat = 'openai-chat' | 'mistral';

/**
 * A local stand-in for the four upstream AI APIs, for tests and the benchmark. It speaks the
 * wire formats the AI SDK providers call, reports deterministic usage, records every request
 * and injects faults per request. Error messages deliberately echo the presented key and the
 * system prompt (worst-case upstream), so tests can check that neither leaks through us.
 *
 * @example
 * const upstream = await createTestUpstream();
 * const config = { ai: upstream.aiConfig({ apiKey: 'server-key' }), serverProviders: ['openai'] };
 * // ... '[[upstream:429:retry=3]]' in a prompt makes that one request fail with 429.
 * await upstream.close();
 */
export interface TestUpstreamOptions {
  /** Output tokens of every reply, capped by the request's max tokens. Default 16. */
  outputTokens?: number;
  /** When set, only these keys are accepted; otherwise any key not starting with `invalid`. */
  validKeys?: string[];
  /**
   * `google`: a key Google does not take is answered as Google answers it, HTTP 400
   * `INVALID_ARGUMENT` naming `API_KEY_INVALID` only in `error.details` (every other format, and
   * Google by default, answers 401).
   */
  keyRefusal?: 'google';
  /** Delay before every answer, in ms. Default 0. */
  latencyMs?: number;
  /** Delay between the frames of a streamed reply, in ms. Default 0. */
  chunkDelayMs?: number;
  /**
   * Awaited before every answer (after `latencyMs`): a test holds answers until a condition of
   * its own (another upstream's progress, its callers' state), not until a time that depends on
   * how fast the machine is.
   */
  gate?: (req: RecordedRequest) => Promise<void>;
  /** Reply text. Default: `Test reply from <format> (<model>)`. Never contains the system prompt. */
  reply?: (req: RecordedRequest) => string;
  /**
   * Input tokens reported for a prompt. Default: 4 characters per token. Pass the server's
   * worst-case estimate to make every call use exactly what it reserved.
   */
  countInputTokens?: (system: string, content: string) => number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  /** Provider inferred from the path (openai covers both OpenAI APIs); a named provider's id under `/named/`. */
  provider: ProviderId | (string & {});
  format: WireFormat | 'models' | 'embeddings';
  /** The key as presented (Authorization bearer, x-api-key, x-goog-api-key or ?key=). */
  apiKey: string | undefined;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown> | undefined;
  model: string;
  system: string;
  content: string;
  maxTokens: number | undefined;
  /** Streaming request, tools offered, tool results returned, JSON schema asked for, attachments sent. */
  extras: RequestExtras | undefined;
  /** Frames of a streamed reply written before the connection ended. */
  framesSent: number;
  /** The client closed the connection before the answer was complete. */
  aborted: boolean;
  /** What the upstream did: 'ok' or the fault kind/status. */
  outcome: string;
}

export interface TestUpstream {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Base URLs in the form the AI SDK providers (and `ai.providers.<id>.baseUrl`) expect. */
  readonly baseUrls: Record<ProviderId, string>;
  /** Every request received, in order. */
  readonly requests: RecordedRequest[];
  /**
   * Base URL of a named provider `id` speaking `format` (`<url>/named/<format>/<id>/v1`): its
   * requests are recorded with `provider: id`, and `failProvider(id, …)` takes it down.
   */
  namedBaseUrl(id: string, format?: NamedWireFormat | 'bedrock'): string;
  /** `config.ai` fragment pointing every provider here (optionally with a server key). */
  aiConfig(opts?: { apiKey?: string }): { providers: Record<ProviderId, { baseUrl: string; apiKey?: string }> };
  /** Apply `fault` to the next `times` generation requests (after marker faults). */
  failNext(fault: UpstreamFault, times?: number): void;
  /**
   * Apply `fault` to every request for `provider`, model lists and key checks included (a provider
   * that is down), until called again with `undefined`. Marker faults still come first.
   */
  failProvider(provider: ProviderId | (string & {}), fault: UpstreamFault | undefined): void;
  setLatency(ms: number): void;
  setOutputTokens(n: number): void;
  setChunkDelay(ms: number): void;
  /** Resolve once `count` requests have been received (default: one more than now). */
  waitForRequests(count?: number, timeoutMs?: number): Promise<void>;
  /** Clear recorded requests and queued faults. */
  reset(): void;
  /** Close the server, destroying hanging connections. */
  close(): Promise<void>;
}

type Route =
  | { provider: string; format: WireFormat; model?: string }
  | { provider: string; format: 'models'; wire?: WireFormat }
  | { provider: string; format: 'embeddings'; wire: EmbeddingFormat; model?: string; batch: boolean };

function route(method: string, path: string, headers: http.IncomingHttpHeaders): Route | undefined {
  // Named providers: /named/<format>/<id>/v1/... in that format's paths.
  const named = /^\/named\/(openai-chat|mistral)\/([a-z][a-z0-9_-]*)\/v1(\/.*)$/.exec(path);
  if (named) {
    const [, format, provider, rest] = named as unknown as [string, 'openai-chat' | 'mistral', string, string];
    if (method === 'POST' && rest === '/chat/completions') return { provider, format };
    if (method === 'POST' && rest === '/embeddings') return { provider, format: 'embeddings', wire: 'openai', batch: true };
    if (method === 'GET' && rest === '/models') return { provider, format: 'models', wire: format };
    return undefined;
  }
  // Named Bedrock providers: /named/bedrock/<id>/model/<model>/converse[-stream] (Converse API, SigV4-signed).
  const bedrock = /^\/named\/bedrock\/([a-z][a-z0-9_-]*)\/model\/([^/]+)\/converse(?:-stream)?$/.exec(path);
  if (bedrock && method === 'POST') return { provider: bedrock[1]!, format: 'bedrock', model: decodeURIComponent(bedrock[2]!) };
  if (method === 'POST') {
    if (path === '/v1/responses') return { provider: 'openai', format: 'openai-responses' };
    if (path === '/v1/chat/completions') return { provider: 'openai', format: 'openai-chat' };
    if (path === '/v1/messages') return { provider: 'anthropic', format: 'anthropic' };
    if (path === '/api/v1/chat/completions') return { provider: 'openrouter', format: 'openrouter' };
    if (path === '/v1/embeddings') return { provider: 'openai', format: 'embeddings', wire: 'openai', batch: true };
    if (path === '/api/v1/embeddings') return { provider: 'openrouter', format: 'embeddings', wire: 'openai', batch: true };
    const e = /^\/v1beta\/models\/([^/:]+):(embedContent|batchEmbedContents)$/.exec(path);
    if (e)
      return {
        provider: 'google',
        format: 'embeddings',
        wire: 'google',
        model: decodeURIComponent(e[1]!),
        batch: e[2] === 'batchEmbedContents',
      };
    const g = /^\/v1beta\/models\/([^/:]+):(?:generateContent|streamGenerateContent)$/.exec(path);
    if (g) return { provider: 'google', format: 'google', model: decodeURIComponent(g[1]!) };
  }
  if (method === 'GET') {
    if (path === '/v1/models') return { provider: headers['x-api-key'] ? 'anthropic' : 'openai', format: 'models' };
    if (path === '/v1beta/models') return { provider: 'google', format: 'models' };
    if (path === '/api/v1/key' || path === '/api/v1/models') return { provider: 'openrouter', format: 'models' };
  }
  return undefined;
}

function presentedKey(req: http.IncomingMessage, url: URL): string | undefined {
  const auth = req.headers.authorization;
  if (auth?.startsWith('Bearer ')) return auth.slice(7);
  // AWS SigV4 (Bedrock): the access key id of the credential scope.
  const sigv4 = auth && /^AWS4-HMAC-SHA256 Credential=([^/]+)\//.exec(auth);
  if (sigv4) return sigv4[1];
  const single = (h: string | string[] | undefined) => (Array.isArray(h) ? h[0] : h);
  // `api-key`: Azure OpenAI's header.
  return (
    single(req.headers['x-api-key']) ??
    single(req.headers['x-goog-api-key']) ??
    single(req.headers['api-key']) ??
    url.searchParams.get('key') ??
    undefined
  );
}

function modelsBody(provider: ProviderId, path: string): Record<string, unknown> {
  if (provider === 'google') return { models: [{ name: 'models/gemini-test', displayName: 'Gemini test' }] };
  if (provider === 'anthropic')
    return {
      data: [{ type: 'model', id: 'claude-test', display_name: 'Claude test', created_at: '2025-01-01T00:00:00Z' }],
      has_more: false,
      first_id: 'claude-test',
      last_id: 'claude-test',
    };
  if (provider === 'openrouter')
    return path.endsWith('/key')
      ? { data: { label: 'test', usage: 0, limit: null, is_free_tier: false } }
      : { data: [{ id: 'openai/gpt-test' }] };
  return { object: 'list', data: [{ id: 'gpt-test', object: 'model', created: 1700000000, owned_by: 'test' }] };
}

/** Start a test upstream on 127.0.0.1 with an ephemeral port. */
export async function createTestUpstream(options: TestUpstreamOptions = {}): Promise<TestUpstream> {
  let outputTokens = options.outputTokens ?? 16;
  let latencyMs = options.latencyMs ?? 0;
  let chunkDelayMs = options.chunkDelayMs ?? 0;
  const requests: RecordedRequest[] = [];
  const queued: UpstreamFault[] = [];
  const down = new Map<string, UpstreamFault>();
  const sockets = new Set<Socket>();
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const isValidKey = (key: string | undefined) =>
    key !== undefined && key !== '' && (options.validKeys ? options.validKeys.includes(key) : !key.startsWith('invalid'));

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => void handle(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse, raw: string): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const r = route(req.method ?? 'GET', url.pathname, req.headers);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      if (res.destroyed) return;
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    if (!r) return send(404, { error: { message: `no such endpoint: ${req.method} ${url.pathname}` } });

    let body: Record<string, unknown> | undefined;
    try {
      body = raw ? (JSON.parse(raw) as Record<string, unknown>) : undefined;
    } catch {
      return send(400, { error: { message: 'request body is not JSON' } });
    }
    const embed = r.format === 'embeddings' ? parseEmbeddingRequest(r.wire, body ?? {}) : undefined;
    const prompt =
      r.format === 'models'
        ? undefined
        : r.format === 'embeddings'
          ? { model: r.model ?? embed!.model, system: '', content: embed!.texts.join('\n'), maxTokens: undefined }
          : parsePrompt(r.format, body ?? {}, 'model' in r ? r.model : undefined);
    const rec: RecordedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      provider: r.provider,
      format: r.format,
      apiKey: presentedKey(req, url),
      headers: { ...req.headers },
      body,
      model: prompt?.model ?? '',
      system: prompt?.system ?? '',
      content: prompt?.content ?? '',
      maxTokens: prompt?.maxTokens,
      extras: r.format === 'models' || r.format === 'embeddings' ? undefined : parseRequestExtras(r.format, body ?? {}, url.pathname),
      framesSent: 0,
      aborted: false,
      outcome: 'ok',
    };
    requests.push(rec);
    res.on('close', () => {
      if (!res.writableFinished) rec.aborted = true;
    });
    for (const w of [...waiters]) {
      if (requests.length < w.count) continue;
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }

    const directives = parseMarkers(`${rec.system}\n${rec.content}`);
    const fault = directives.fault ?? down.get(r.provider) ?? (r.format !== 'models' ? queued.shift() : undefined);
    const delay = directives.latencyMs ?? latencyMs;
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay)); // the configured latency (a simulated slow upstream, on purpose)
    if (options.gate) await options.gate(rec);
    const format: WireFormat =
      r.format === 'embeddings'
        ? r.wire === 'google'
          ? 'google'
          : r.provider === 'openrouter'
            ? 'openrouter'
            : url.pathname.startsWith('/named/mistral/')
              ? 'mistral'
              : 'openai-chat'
        : r.format === 'models'
          ? (r.wire ??
            (r.provider === 'openrouter'
              ? 'openrouter'
              : r.provider === 'anthropic'
                ? 'anthropic'
                : r.provider === 'google'
                  ? 'google'
                  : 'openai-chat'))
          : r.format;

    // A named OpenAI-compatible server may run without keys (a local vLLM or Ollama): none sent is fine there.
    const keylessOk = url.pathname.startsWith('/named/openai-chat/') && rec.apiKey === undefined && !options.validKeys;
    if (!keylessOk && !isValidKey(rec.apiKey)) {
      // Like some real providers, the message quotes the key: we must never pass it on.
      const message = `Incorrect API key provided: ${rec.apiKey ?? '(none)'}`;
      if (options.keyRefusal === 'google' && r.provider === 'google') {
        rec.outcome = '400';
        return send(400, googleKeyRefusal(message));
      }
      rec.outcome = '401';
      return send(401, errorBody(format, 401, message));
    }
    if (fault) {
      rec.outcome = fault.kind === 'status' ? String(fault.status) : fault.kind;
      switch (fault.kind) {
        case 'status': {
          const headers: Record<string, string> = fault.retryAfter !== undefined ? { 'retry-after': String(fault.retryAfter) } : {};
          return send(
            fault.status,
            errorBody(format, fault.status, `injected failure; request had system prompt: ${rec.system}`, {
              code: fault.code,
              param: fault.param,
            }),
            headers,
          );
        }
        case 'hang':
          return; // never answer; close() or the client ends it
        case 'stall':
          if (!rec.extras?.stream) return;
          break; // the stream below stops after its first frame
        case 'reset':
          req.socket.destroy();
          return;
        case 'drop':
        case 'truncate':
          if (rec.extras?.stream) break; // the stream below is cut (drop: after three frames; truncate: before its last ones)
          res.writeHead(200, { 'content-type': 'application/json' });
          // The socket dies once the partial body has been handed to the kernel (so the client gets it first).
          res.write('{"id":"partial","object":', () => req.socket.destroy());
          return;
        case 'malformed':
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"id": "broken", "choices": [ this is not json');
          return;
        case 'noUsage':
        case 'json':
        case 'usage':
          break;
      }
    }
    if (r.format === 'embeddings') {
      const dims = embed!.dimensions ?? 8;
      return send(200, embeddingReply(r.wire, embed!.texts, rec.model, dims, r.batch, fault?.kind === 'noUsage'));
    }
    if (r.format === 'models') return send(200, modelsBody(r.wire ? 'openai' : (r.provider as ProviderId), url.pathname));

    const p = prompt!;
    const wanted = directives.outputTokens ?? outputTokens;
    const out = p.maxTokens !== undefined ? Math.min(p.maxTokens, wanted) : wanted;
    const plan = planReply(rec.extras!, options.reply ? options.reply(rec) : `Test reply from ${r.format} (${p.model})`);
    const inputTokens = options.countInputTokens
      ? options.countInputTokens(p.system, p.content)
      : Math.ceil((p.system.length + p.content.length) / 4);
    const parts = {
      model: p.model,
      text: plan.kind === 'text' ? plan.text : '',
      ...(plan.kind === 'tool' ? { toolCall: { id: plan.id, name: plan.name, input: plan.input } } : {}),
      inputTokens,
      ...(directives.cachedTokens ? { cachedTokens: Math.min(directives.cachedTokens, inputTokens) } : {}),
      outputTokens: out,
      // A reply that stopped on a stop sequence did not reach the limit.
      truncated: p.maxTokens !== undefined && p.maxTokens < wanted && !(plan.kind === 'text' && plan.stopSequence !== undefined),
      omitUsage: fault?.kind === 'noUsage',
      ...(plan.kind === 'text' && plan.stopSequence !== undefined ? { stopSequence: plan.stopSequence } : {}),
    };
    if (!rec.extras!.stream || fault?.kind === 'json') {
      const body = replyBody(r.format, parts);
      return send(200, fault?.kind === 'usage' ? bodyWithUsage(r.format, body, fault.values) : body);
    }

    const built = streamFrames(r.format, parts);
    const frames = fault?.kind === 'usage' ? framesWithUsage(r.format, built, fault.values, fault.again) : built;
    // A drop cuts the stream after its first output: three frames, five on the Responses API (its
    // created, in_progress, output_item.added and content_part.added come before the first delta).
    // A truncated stream loses its last frames (its terminal event, its usage event).
    const stopAfter =
      fault?.kind === 'stall'
        ? 1
        : fault?.kind === 'drop'
          ? r.format === 'openai-responses'
            ? 5
            : 3
          : fault?.kind === 'truncate'
            ? frames.length - fault.omit
            : Infinity;
    const gap = directives.chunkDelayMs ?? chunkDelayMs;
    res.writeHead(200, { 'content-type': streamContentType(r.format), 'cache-control': 'no-cache' });
    let written: Promise<unknown> = Promise.resolve();
    for (const frame of frames) {
      if (res.destroyed) return;
      if (rec.framesSent >= stopAfter) {
        // A clean truncation ends the response as if it were complete (a server that closes early).
        if (fault?.kind === 'truncate' && fault.clean) return void res.end();
        if (fault?.kind === 'truncate' && fault.stall) return; // keep the connection open, send nothing more
        // The connection dies once the frames already written have been handed to the kernel.
        if (fault?.kind === 'drop' || fault?.kind === 'truncate') void written.then(() => req.socket.destroy());
        return; // stall: keep the connection open, send nothing more
      }
      written = new Promise((resolve) => res.write(frame, resolve));
      rec.framesSent++;
      // The configured pace between frames (a simulated slow model, on purpose).
      if (gap > 0) await new Promise((resolve) => setTimeout(resolve, gap));
    }
    res.end();
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;
  const baseUrls: Record<ProviderId, string> = {
    openai: `${base}/v1`,
    anthropic: `${base}/v1`,
    google: `${base}/v1beta`,
    openrouter: `${base}/api/v1`,
  };

  return {
    url: base,
    baseUrls,
    requests,
    namedBaseUrl(id, format = 'openai-chat') {
      // Bedrock's SDK builds `<base>/model/<id>/converse` (no version path).
      return format === 'bedrock' ? `${base}/named/bedrock/${id}` : `${base}/named/${format}/${id}/v1`;
    },
    aiConfig(opts = {}) {
      const entry = (id: ProviderId) => ({ baseUrl: baseUrls[id], ...(opts.apiKey !== undefined ? { apiKey: opts.apiKey } : {}) });
      return {
        providers: { anthropic: entry('anthropic'), openai: entry('openai'), google: entry('google'), openrouter: entry('openrouter') },
      };
    },
    failNext(fault, times = 1) {
      for (let i = 0; i < times; i++) queued.push(fault);
    },
    failProvider(provider, fault) {
      if (fault) down.set(provider, fault);
      else down.delete(provider);
    },
    setLatency(ms) {
      latencyMs = ms;
    },
    setOutputTokens(n) {
      outputTokens = n;
    },
    setChunkDelay(ms) {
      chunkDelayMs = ms;
    },
    waitForRequests(count = requests.length + 1, timeoutMs = 5000) {
      if (requests.length >= count) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`test upstream: ${requests.length}/${count} requests after ${timeoutMs} ms`)),
          timeoutMs,
        );
        waiters.push({ count, resolve: () => (clearTimeout(timer), resolve()) });
      });
    },
    reset() {
      requests.length = 0;
      queued.length = 0;
      down.clear();
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
