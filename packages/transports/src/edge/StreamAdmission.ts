import { CoreError } from '@ai-backend/core/internal';
import { openFileLimit } from './connectionLimit.js';
import { edgeError, type EdgeFamily } from './edgeError.js';

/** The part of Node's ServerResponse a held place needs: its end, however it comes. */
export interface ClosableResponse {
  readonly closed?: boolean;
  once(event: 'close', listener: () => void): unknown;
  /** Close the stream from our side (its credential was lost): node:http's ServerResponse. */
  destroy?(): unknown;
  /** HTTP/1.1's keep-alive for this response's connection (node:http's ServerResponse; absent on HTTP/2). */
  shouldKeepAlive?: boolean;
}

export interface StreamCapsOptions {
  /** Long-lived streams one client address may hold open (`limits.maxSseStreamsPerClient`). More get 429. */
  perAddress: number;
  /** Long-lived streams one identity (subject) may hold open, from any address (`limits.maxSseStreamsPerIdentity`). More get 429. */
  perIdentity: number;
  /** Long-lived streams this server instance holds in all (`limits.maxSseStreams`). More get 503. */
  total: number;
  /** The Retry-After of a refusal, in seconds. Default 5. */
  retryAfterSec?: number;
}

/** Why a stream was refused, and how to answer it. */
export interface StreamRefusal {
  status: 429 | 503;
  /** Which cap was reached. */
  cap: 'address' | 'identity' | 'server';
  limit: number;
  message: string;
  retryAfterSec: number;
}

/** A place taken for one stream: give it back exactly once (calling it again does nothing). */
export type StreamPlace = () => void;

/** Which answers keep their place while they are written: event streams only, or any body. */
export type HeldBodies = 'event-stream' | 'any-body';

/** The request a held stream was opened by (core's RequestScope): its credential is watched while the stream is open. */
export interface WatchedCredential {
  watchCredential(onLost: () => void): () => void;
}

/**
 * The one admission every long-lived response goes through (MCP GET streams, MCP POST answers
 * streamed as SSE, MCP 2026 `subscriptions/listen`, /v1 streams, tRPC streamed batches and subscriptions): each
 * holds a socket, and so a file descriptor, for as long as the client wants, so without a cap one
 * address (or one identity from many addresses, or many addresses at once) could hold every
 * descriptor the process has and leave nothing for /health or anyone else. A place is taken
 * before the stream starts (synchronously, so concurrent opens cannot all slip under a cap) and
 * given back when the response ends: the Node response's 'close', or elsewhere the body's end.
 */
export class StreamAdmission {
  private readonly byAddress = new Map<string, number>();
  private readonly byIdentity = new Map<string, number>();
  private held = 0;
  private readonly retryAfterSec: number;

  constructor(readonly caps: StreamCapsOptions) {
    for (const [name, v] of Object.entries({ perAddress: caps.perAddress, perIdentity: caps.perIdentity, total: caps.total })) {
      if (!Number.isInteger(v) || v < 1) throw new TypeError(`StreamAdmission: ${name} must be a positive integer`);
    }
    this.retryAfterSec = caps.retryAfterSec ?? 5;
  }

  /** Streams held open now. */
  get open(): number {
    return this.held;
  }

  /** A place for one stream from `ip` (and `sub` when signed in), or why not. */
  take(ip: string, sub?: string | null): StreamPlace | StreamRefusal {
    const { perAddress, perIdentity, total } = this.caps;
    if (this.held >= total)
      return this.refusal(503, 'server', total, `this server holds as many event streams as it may (limit ${total}); retry later`);
    if ((this.byAddress.get(ip) ?? 0) >= perAddress)
      return this.refusal(
        429,
        'address',
        perAddress,
        `too many open event streams from this address (limit ${perAddress}); close one before opening another`,
      );
    if (sub && (this.byIdentity.get(sub) ?? 0) >= perIdentity)
      return this.refusal(
        429,
        'identity',
        perIdentity,
        `too many open event streams for this identity (limit ${perIdentity}); close one before opening another`,
      );
    this.held++;
    bump(this.byAddress, ip, 1);
    if (sub) bump(this.byIdentity, sub, 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.held--;
      bump(this.byAddress, ip, -1);
      if (sub) bump(this.byIdentity, sub, -1);
    };
  }

  /**
   * Keep `place` until `res` is over when it is an event stream (`streams: 'any-body'`: a streamed
   * answer of another type too, tRPC's streamed batches), else give it back at once. `outgoing`:
   * the Node response it is written to. While it is held, the credential of `by` (the request that
   * opened it) is watched: a stream whose key is revoked, whose token expires or whose
   * administrator is demoted is closed (docs/security.md, "Streams and the credential").
   */
  hold(
    res: Response,
    place: StreamPlace,
    outgoing?: ClosableResponse,
    streams: HeldBodies = 'event-stream',
    by?: WatchedCredential,
  ): Response {
    if (streams === 'event-stream' && !isEventStream(res)) {
      place();
      return res;
    }
    if (outgoing ? outgoing.closed : !res.body) {
      place();
      return res;
    }
    // Held: ended from our side by the Node response's destroy, or in process by cutting the body.
    const cut = outgoing ? undefined : new AbortController();
    const unwatch = by?.watchCredential(() => (outgoing ? outgoing.destroy?.() : cut!.abort()));
    const release = () => {
      unwatch?.();
      place();
    };
    if (outgoing) {
      outgoing.once('close', release);
      return res;
    }
    return withEnd(res, release, cut!.signal);
  }

  private refusal(status: 429 | 503, cap: StreamRefusal['cap'], limit: number, message: string): StreamRefusal {
    return { status, cap, limit, message, retryAfterSec: this.retryAfterSec };
  }
}

/**
 * A refused stream's connection is closed once the refusal is written (HTTP/1.1: `Connection:
 * close`), not kept alive: a client refused at a cap is one that holds many connections, and the
 * server cap is there to keep descriptors for everyone else, so the refusal frees one instead of
 * leaving an idle socket behind. Under in-process fetch or HTTP/2 (no such flag) nothing changes.
 */
export function closeAfterRefusal(outgoing: ClosableResponse | undefined): void {
  if (outgoing && typeof outgoing.shouldKeepAlive === 'boolean') outgoing.shouldKeepAlive = false;
}

/** Whether `res` is an event stream, by its content type. */
export const isEventStream = (res: Response): boolean => res.headers.get('content-type')?.includes('text/event-stream') === true;

export const isRefusal = (p: StreamPlace | StreamRefusal): p is StreamRefusal => typeof p !== 'function';

/** A refusal as a core error, for entry points that format core errors in their own wire shape (/v1). */
export function refusalError(r: StreamRefusal): CoreError {
  return new CoreError(r.status === 503 ? 'UNAVAILABLE' : 'RATE_LIMITED', r.message, {
    headers: { 'Retry-After': String(r.retryAfterSec) },
    details: { reason: 'stream_cap', cap: r.cap, limit: r.limit },
  });
}

/** A refusal in a route family's shape (a JSON-RPC error on /mcp, a tRPC error on /trpc). */
export function refusalResponse(family: EdgeFamily, r: StreamRefusal): Response {
  return edgeError(family, r.status, r.message, { 'Retry-After': String(r.retryAfterSec) });
}

function bump(map: Map<string, number>, key: string, by: number): void {
  const n = (map.get(key) ?? 0) + by;
  if (n > 0) map.set(key, n);
  else map.delete(key);
}

/** `res` with a body that calls `onEnd` once when it ends, fails or is cancelled; `cut` ends it from our side. */
export function withEnd(res: Response, onEnd: () => void, cut?: AbortSignal): Response {
  let counted = true;
  const done = () => {
    if (counted) onEnd();
    counted = false;
  };
  const reader = res.body!.getReader();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      cut?.addEventListener(
        'abort',
        () => {
          done();
          controller.error(new Error('the stream was closed: its credential no longer holds'));
          void reader.cancel().catch(() => undefined);
        },
        { once: true },
      );
    },
    async pull(controller) {
      try {
        const { done: end, value } = await reader.read();
        // Cut while the read waited: the stream is already errored, nothing more goes into it.
        if (cut?.aborted) return;
        if (end) {
          done();
          controller.close();
        } else controller.enqueue(value);
      } catch (err) {
        if (cut?.aborted) return;
        done();
        controller.error(err);
      }
    },
    cancel(reason) {
      done();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}

/**
 * The default of `limits.maxSseStreams` for a process that may open `soft` descriptors: a third of
 * them, so streams can never take the descriptors /health, storage and other clients need. A
 * third, not a half: a stream of an AI answer (`/v1`, or `ai.streamText` behind tRPC or MCP) holds
 * two, the client's socket and the upstream's, so a server full of them uses two thirds. Between
 * 32 and 4096; 1024 where the limit is unknown (or unlimited).
 */
export function streamTotalFor(soft: number | undefined): number {
  if (soft === undefined || !Number.isFinite(soft)) return 1024;
  return Math.max(32, Math.min(4096, Math.floor(soft / 3)));
}

/**
 * `streamTotalFor` this process's open-file limit (Linux `/proc/self/limits`, read once when the
 * server is built; Node raises the soft limit to the hard one at start).
 */
export function defaultStreamTotal(): number {
  return streamTotalFor(openFileLimit());
}

/** The caps of `limits` (defaults resolved here, once per server). */
export function streamCapsOf(limits: {
  maxSseStreamsPerClient: number;
  maxSseStreamsPerIdentity: number;
  maxSseStreams?: number | undefined;
}): StreamCapsOptions {
  return {
    perAddress: limits.maxSseStreamsPerClient,
    perIdentity: limits.maxSseStreamsPerIdentity,
    total: limits.maxSseStreams ?? defaultStreamTotal(),
  };
}
