import { CoreError } from '../../errors/CoreError.js';
import type { ResourceContent, SchemeHandler } from './ResourceRegistry.js';

export interface HttpSchemeHandlerOptions {
  /** Give up after this many ms. Default 10000. */
  timeoutMs?: number;
  /** Refuse bodies larger than this many bytes. Default 5 MiB. */
  maxBytes?: number;
  /** Injected fetch (tests, proxies). Default: global fetch. */
  fetch?: typeof fetch;
}

const TEXTUAL = /^(text\/|application\/(json|xml|javascript|x-www-form-urlencoded|yaml|x-yaml|toml)|[^;]*\+(json|xml))/i;

/**
 * http and https resources: a GET with a time limit and a size limit. Redirects are not
 * followed (a registered URL must not turn into a fetch of an unregistered one). Textual
 * media types come back as text, anything else as a base64 blob.
 */
export function createHttpSchemeHandlers(opts: HttpSchemeHandlerOptions = {}): SchemeHandler[] {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const maxBytes = opts.maxBytes ?? 5 * 1024 * 1024;
  const doFetch = opts.fetch ?? fetch;

  async function read(uri: URL, signal?: AbortSignal): Promise<ResourceContent> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    let res: Response;
    try {
      res = await doFetch(uri, { redirect: 'manual', signal: combined, headers: { accept: '*/*' } });
    } catch (err) {
      if (timeout.aborted) throw new CoreError('UPSTREAM_TIMEOUT', `fetching ${uri.origin} timed out`);
      if (signal?.aborted) throw new CoreError('CANCELLED', 'request cancelled');
      throw new CoreError('UPSTREAM_ERROR', `fetching ${uri.origin} failed`, { cause: err });
    }
    if (res.status === 404 || res.status === 410) throw new CoreError('NOT_FOUND', 'resource not found upstream');
    if (res.status < 200 || res.status >= 300) {
      await res.body?.cancel();
      throw new CoreError('UPSTREAM_ERROR', `upstream answered ${res.status}`);
    }
    const declared = Number(res.headers.get('content-length') ?? '0');
    if (declared > maxBytes) {
      await res.body?.cancel();
      throw new CoreError('PAYLOAD_TOO_LARGE', `resource is larger than ${maxBytes} bytes`);
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    if (res.body) {
      const reader = res.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        if (size > maxBytes) {
          await reader.cancel();
          throw new CoreError('PAYLOAD_TOO_LARGE', `resource is larger than ${maxBytes} bytes`);
        }
        chunks.push(value);
      }
    }
    const bytes = Buffer.concat(chunks);
    const mimeType = (res.headers.get('content-type') ?? 'application/octet-stream').split(';')[0]!.trim();
    return TEXTUAL.test(mimeType) ? { content: bytes.toString('utf8'), mimeType } : { content: bytes.toString('base64'), mimeType, blob: true };
  }

  return [
    { scheme: 'http', read },
    { scheme: 'https', read },
  ];
}
