/**
 * The in-process half of the matrix for suites whose clients take a URL (the official `openai`,
 * `@anthropic-ai/sdk`, MCP SDK and tRPC clients, and helpers that call `fetch(url + path)`): the
 * server gets an origin of its own, and `globalThis.fetch` hands every request to that origin to
 * `server.fetch` instead of a socket. Nothing of ours is replaced; the clients run unchanged and
 * every other origin (the test AI upstream the server itself calls) still goes over the network.
 *
 * The origin is 127.0.0.1 on a port below 1024 that no test listens on (servers listen on port 0,
 * so they get ephemeral ports): a request that escaped the router would be refused, not answered
 * by another server, and a loopback-bound server's Host check accepts it.
 */
type Handler = (req: Request) => Promise<Response>;

const routes = new Map<string, Handler>();
const networkFetch = globalThis.fetch;
/**
 * Origins are handed out from ports 700 to 1023, round and round, skipping those still routed: the
 * files of a worker that shares its module graph (vitest's isolate: false) would share this module
 * too, and a count that only grew would leave the range below 1024 after a few hundred servers,
 * where a port may be one a real server listens on.
 */
const FIRST_PORT = 700;
const LAST_PORT = 1023;
let nextPort = FIRST_PORT;

function freeOrigin(): string {
  for (let tried = 0; tried <= LAST_PORT - FIRST_PORT; tried++) {
    const url = `http://127.0.0.1:${nextPort}`;
    nextPort = nextPort === LAST_PORT ? FIRST_PORT : nextPort + 1;
    if (!routes.has(url)) return url;
  }
  throw new Error(`routeInProcess: all ${LAST_PORT - FIRST_PORT + 1} in-process origins are routed (servers never stopped?)`);
}

function routedFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const href = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  const handler = routes.get(new URL(href).origin);
  if (!handler) return networkFetch(input, init);
  // A streamed request body needs duplex 'half' in a Request built from it (Node's undici).
  const req = new Request(input, init?.body instanceof ReadableStream ? ({ ...init, duplex: 'half' } as RequestInit) : init);
  return abortable(req.signal, handler(req));
}

/**
 * What a socket fetch does when its signal aborts, which `server.fetch` alone does not: the
 * pending call rejects with the signal's reason (an AbortError), and a body being read errors.
 * The server sees the same abort through `req.signal`, as it sees a disconnect over a socket.
 */
function abortable(signal: AbortSignal, pending: Promise<Response>): Promise<Response> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<Response>((resolve, reject) => {
    const early = () => reject(signal.reason);
    signal.addEventListener('abort', early, { once: true });
    pending.then(
      (res) => {
        signal.removeEventListener('abort', early);
        if (!res.body) return resolve(res);
        const reader = res.body.getReader();
        let controller!: ReadableStreamDefaultController<Uint8Array>;
        const late = () => {
          controller.error(signal.reason);
          void reader.cancel(signal.reason).catch(() => undefined);
        };
        const body = new ReadableStream<Uint8Array>(
          {
            start: (c) => void (controller = c),
            async pull(c) {
              const { done, value } = await reader.read();
              if (done) {
                signal.removeEventListener('abort', late);
                c.close();
              } else c.enqueue(value);
            },
            cancel: (reason) => {
              signal.removeEventListener('abort', late);
              return reader.cancel(reason);
            },
          },
          { highWaterMark: 0 },
        );
        signal.addEventListener('abort', late, { once: true });
        resolve(new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers }));
      },
      (err) => {
        signal.removeEventListener('abort', early);
        reject(err);
      },
    );
  });
}

/** Route `fetch` to `handler` for a fresh origin; `release()` removes the route. */
export function routeInProcess(handler: Handler): { url: string; release(): void } {
  const url = freeOrigin();
  routes.set(url, handler);
  globalThis.fetch = routedFetch as typeof fetch;
  return {
    url,
    release() {
      routes.delete(url);
      if (routes.size === 0) globalThis.fetch = networkFetch;
    },
  };
}
