import { CoreError } from '../../kernel/CoreError.js';
import { guardedFetch } from '../../net/guardedFetch.js';
import type { ResourceContent, SchemeHandler } from './ResourceRegistry.js';

export interface HttpSchemeHandlerOptions {
  /** Give up after this many ms. Default 10000. */
  timeoutMs?: number;
  /** Refuse bodies larger than this many bytes. Default 5 MiB. */
  maxBytes?: number;
  /**
   * Fetch from loopback, private and link-local addresses too. Default false: a registered URL
   * whose host resolves to such an address is refused (SSRF), checked at connect time.
   */
  allowPrivateNetwork?: boolean;
}

const TEXTUAL = /^(text\/|application\/(json|xml|javascript|x-www-form-urlencoded|yaml|x-yaml|toml)|[^;]*\+(json|xml))/i;

/**
 * http and https resources: a GET through core's `guardedFetch` (public addresses only unless
 * allowed, a time limit and a size limit). Redirects are not followed (a registered URL must
 * not turn into a fetch of an unregistered one). Textual media types come back as text,
 * anything else as a base64 blob.
 */
export function createHttpSchemeHandlers(opts: HttpSchemeHandlerOptions = {}): SchemeHandler[] {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const maxBytes = opts.maxBytes ?? 5 * 1024 * 1024;

  async function read(uri: URL, signal?: AbortSignal): Promise<ResourceContent> {
    // The http handler serves http URLs the operator registered on purpose; https stays https.
    const res = await guardedFetch(uri, {
      timeoutMs,
      maxBytes,
      allowHttp: uri.protocol === 'http:',
      allowPrivateNetwork: opts.allowPrivateNetwork ?? false,
      headers: { accept: '*/*' },
      ...(signal ? { signal } : {}),
    });
    if (res.status === 404 || res.status === 410) throw new CoreError('NOT_FOUND', 'resource not found upstream');
    if (res.status < 200 || res.status >= 300) throw new CoreError('UPSTREAM_ERROR', `upstream answered ${res.status}`);
    const mimeType = (res.headers.get('content-type') ?? 'application/octet-stream').split(';')[0]!.trim();
    return TEXTUAL.test(mimeType)
      ? { content: res.body.toString('utf8'), mimeType }
      : { content: res.body.toString('base64'), mimeType, blob: true };
  }

  return [
    { scheme: 'http', read },
    { scheme: 'https', read },
  ];
}
