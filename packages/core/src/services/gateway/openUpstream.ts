import type { Client } from '@modelcontextprotocol/client';
import type { McpServerConfig } from '../../config/sections/mcpServers.js';
import type { HttpRequester } from '../../net/httpRequest.js';
import type { HttpSession } from './postToolCall.js';
import { boundedFetch } from './boundedFetch.js';
import { checkStdioAnswers } from './checkedAnswer.js';
import { checkedFetch } from './checkedFetch.js';
import { packageVersion } from '../../lib/packageVersion.js';
import { ENVELOPE_BYTES } from './upstreamLists.js';

/**
 * The MCP SDK's v2 client (`@modelcontextprotocol/client`): the one client library with all three
 * transports an `.mcp.json` names (stdio, Streamable HTTP in either revision, legacy SSE) and the
 * same major version as the server /mcp runs on. It is an optional peer of core: loaded here, on
 * the first connection to an upstream, so a server without `mcpServers` never loads it
 * (docs/mcp-gateway.md "Installing").
 */
type ClientModule = typeof import('@modelcontextprotocol/client');
type StdioModule = typeof import('@modelcontextprotocol/client/stdio');

let clientModule: Promise<ClientModule> | undefined;
let stdioModule: Promise<StdioModule> | undefined;

const missing = (err: unknown): Error =>
  new Error(
    `the MCP gateway needs @modelcontextprotocol/client (npm i @modelcontextprotocol/client@2): ${err instanceof Error ? err.message : String(err)}`,
  );

export function loadClientModule(): Promise<ClientModule> {
  clientModule ??= import('@modelcontextprotocol/client').catch((err: unknown) => {
    clientModule = undefined;
    throw missing(err);
  });
  return clientModule;
}

function loadStdioModule(): Promise<StdioModule> {
  stdioModule ??= import('@modelcontextprotocol/client/stdio').catch((err: unknown) => {
    stdioModule = undefined;
    throw missing(err);
  });
  return stdioModule;
}

/** What an open upstream connection gives its owner besides the client. */
export interface OpenedUpstream {
  client: Client;
  /**
   * End the connection: a Streamable HTTP session is ended at the upstream first (DELETE, as the
   * MCP specification asks of a client done with a session), then the client is closed. Never throws.
   */
  close: () => Promise<void>;
  /** The child's pid (stdio), for status pages and tests. */
  pid: number | null;
  /** The last bytes the child wrote to stderr (stdio): shown to administrators only. */
  stderrTail: () => string;
  /**
   * The open 2025 Streamable HTTP session (type 'http' speaking a 2025 revision), which tools/call
   * is posted on directly (postToolCall); undefined for stdio, SSE and 2026-07-28 upstreams. The
   * same object while the session lasts (postToolCall keeps what it derives from it per object).
   */
  httpSession: () => HttpSession | undefined;
  /**
   * Hear the upstream's `notifications/progress` for a progress token the gateway chose itself
   * (callAsTask); until the returned function is called.
   */
  watchProgress: (token: string, fn: (progress: UpstreamProgress) => void) => () => void;
}

export interface UpstreamProgress {
  progress: number;
  total?: number;
  message?: string;
}

export interface OpenOptions {
  /** Headers of this connection (shared config headers, or a user's credentials merged over them). */
  headers: Record<string, string>;
  /** Called once when the connection closes for any reason (process exit, HTTP session gone). */
  onClose: () => void;
  /** list_changed from the upstream (tools, prompts or resources). */
  onListChanged: (kind: 'tools' | 'prompts' | 'resources') => void;
  /** notifications/resources/updated from the upstream (a resource the connection subscribed to changed). */
  onResourceUpdated?: (uri: string) => void;
  timeoutMs: number;
  maxResultBytes: number;
  /** A fetch that refuses non-public addresses (remote servers), see guardUpstreamUrl. */
  fetch?: typeof fetch;
  /** What the forwarded tools/call is sent with (the guarded request of remote servers, or Node's client). */
  request: HttpRequester;
}

const STDERR_TAIL = 2048;

/** How long a closing connection waits for the upstream to answer the DELETE of its session. */
const TERMINATE_MS = 2000;

/** The one place a 2025 upstream's server-to-client request can be routed to its caller (docs/mcp-gateway.md). */
const ONLY_ON_CALL_STREAMS =
  'the MCP gateway forwards sampling and elicitation to its client only when a Streamable HTTP server (2025 revision) asks during a tool call';

/** How the gateway introduces itself to upstream servers: its version is core's (the manifest's). */
const GATEWAY_CLIENT_INFO = { name: 'ai-backend-gateway', version: packageVersion(import.meta.url, '@ai-backend/core') };

/**
 * Open one client connection to `server`. A Streamable HTTP client declares sampling and
 * elicitation: a 2025 server sends those requests on the stream of the tool call that needs them,
 * which postToolCall reads, so they reach the one caller they concern. Asked anywhere else (on the
 * session's own stream, where many callers share the connection; a 2026-07-28 server) they are
 * refused with a clear error. Roots are never declared: servers ask for them outside calls and
 * keep them per session, and a shared session would hand one caller's workspace to everyone.
 */
export async function openUpstream(server: McpServerConfig, opts: OpenOptions): Promise<OpenedUpstream> {
  const { Client, StreamableHTTPClientTransport, SSEClientTransport, SseError, parseJSONRPCMessage } = await loadClientModule();
  const client = new Client(GATEWAY_CLIENT_INFO, {
    capabilities: server.type === 'http' ? { sampling: {}, elicitation: {} } : {},
    // A 2026-07-28 upstream is spoken to in its own revision; on stdio the probe would spawn a
    // second process per connect, so stdio servers get the 2025 handshake every server accepts.
    versionNegotiation: { mode: server.type === 'http' ? 'auto' : 'legacy', probe: { timeoutMs: opts.timeoutMs } },
    listChanged: {
      tools: { autoRefresh: false, onChanged: () => opts.onListChanged('tools') },
      prompts: { autoRefresh: false, onChanged: () => opts.onListChanged('prompts') },
      resources: { autoRefresh: false, onChanged: () => opts.onListChanged('resources') },
    },
  });
  const updated = opts.onResourceUpdated;
  if (updated) client.setNotificationHandler('notifications/resources/updated', (n) => updated(n.params.uri));
  if (server.type === 'http') {
    const refuse = (): never => {
      throw new Error(ONLY_ON_CALL_STREAMS);
    };
    client.setRequestHandler('sampling/createMessage', refuse);
    client.setRequestHandler('elicitation/create', refuse);
  }
  let tail = '';
  let pid: () => number | null = () => null;
  let transport;
  if (server.type === 'stdio') {
    const { StdioClientTransport, getDefaultEnvironment } = await loadStdioModule();
    const stdio = new StdioClientTransport({
      command: server.command,
      args: server.args,
      // The SDK's safe default set (PATH, HOME, ...) plus the configured variables: the gateway's own secrets are not inherited.
      env: { ...getDefaultEnvironment(), ...server.env },
      ...(server.cwd ? { cwd: server.cwd } : {}),
      stderr: 'pipe',
      maxBufferSize: opts.maxResultBytes + ENVELOPE_BYTES,
    });
    // An answer the SDK cannot read is an error to its request at once, not a wait for timeoutMs (checkedAnswer).
    checkStdioAnswers(stdio, opts.maxResultBytes + ENVELOPE_BYTES, parseJSONRPCMessage);
    stdio.stderr?.on('data', (chunk: Buffer) => {
      tail = (tail + chunk.toString('utf8')).slice(-STDERR_TAIL);
    });
    pid = () => stdio.pid;
    transport = stdio;
  } else {
    const url = new URL(server.url);
    // Answers are bounded while they are read (gateway.maxResultBytes), not after the SDK has buffered them, and
    // one the SDK cannot read is an error to its request at once (checkedFetch).
    const fetched = checkedFetch(boundedFetch(opts.fetch ?? fetch, opts.maxResultBytes));
    const init = { requestInit: { headers: opts.headers }, fetch: fetched };
    transport = server.type === 'http' ? new StreamableHTTPClientTransport(url, init) : new SSEClientTransport(url, init);
  }
  let closed = false;
  client.onclose = () => {
    if (closed) return;
    closed = true;
    opts.onClose();
  };
  let connected = false;
  client.onerror = (err) => {
    // A legacy SSE server answers every request on its one event stream: once that stream breaks
    // (the server stopped or restarted), no answer can come, and a reconnecting EventSource would
    // only reach a new, uninitialized session. Closed here, the calls in flight fail at once
    // (instead of at timeoutMs) and the connection recovers like a stdio server that died.
    if (connected && server.type === 'sse' && err instanceof SseError) void client.close().catch(() => undefined);
  };
  const http =
    server.type === 'http'
      ? { transport: transport as InstanceType<ClientModule['StreamableHTTPClientTransport']>, url: server.url }
      : undefined;
  const close = () => closeUpstream(client, http?.transport, Math.min(opts.timeoutMs, TERMINATE_MS));
  try {
    await client.connect(transport, { timeout: opts.timeoutMs });
    connected = true;
  } catch (err) {
    closed = true;
    await close();
    throw err;
  }
  const watchProgress = progressWatchers(transport);
  let session: HttpSession | undefined;
  const httpSession = (): HttpSession | undefined => {
    const version = http?.transport.protocolVersion;
    // A 2026-07-28 exchange carries its version and capabilities in each request's _meta: left to the SDK client.
    if (!http || !version || version >= '2026') return undefined;
    const sessionId = http.transport.sessionId;
    if (!session || session.sessionId !== sessionId || session.protocolVersion !== version)
      session = { url: http.url, headers: opts.headers, sessionId, protocolVersion: version, request: opts.request };
    return session;
  };
  return { client, close, pid: pid(), stderrTail: () => tail, httpSession, watchProgress };
}

/**
 * Progress under tokens the gateway chose itself, taken from the transport before the SDK client
 * sees it. The client forgets a request's progress token once the request is answered, and a
 * task-augmented tools/call is answered at once (the task was created): the upstream's progress
 * for the task, sent under that token for the task's whole life (MCP 2025-11-25 tasks), was
 * dropped as "a progress notification for an unknown token".
 */
function progressWatchers(transport: {
  onmessage?: ((message: never, extra?: never) => void) | undefined;
}): OpenedUpstream['watchProgress'] {
  const watchers = new Map<string, (progress: UpstreamProgress) => void>();
  const inner = transport.onmessage;
  if (!inner) return () => () => undefined;
  transport.onmessage = (message, extra) => {
    const m = message as { method?: unknown; params?: { progressToken?: unknown; progress?: unknown; total?: unknown; message?: unknown } };
    const watcher =
      m.method === 'notifications/progress' && typeof m.params?.progressToken === 'string'
        ? watchers.get(m.params.progressToken)
        : undefined;
    if (!watcher) return inner(message, extra);
    const { progress, total, message: text } = m.params!;
    if (typeof progress !== 'number') return;
    watcher({
      progress,
      ...(typeof total === 'number' ? { total } : {}),
      ...(typeof text === 'string' ? { message: text.slice(0, 1000) } : {}),
    });
  };
  return (token, fn) => {
    watchers.set(token, fn);
    return () => void watchers.delete(token);
  };
}

/**
 * Close `client`, ending its Streamable HTTP session at the upstream first. A server keeps a
 * session (its transport, server and stored events) until the client DELETEs it or the server
 * idles it out, and many never do: server-everything keeps every session for as long as it runs.
 * Without the DELETE every connection the gateway let go (a per-user one evicted or idle, new
 * credentials, a server removed or changed, a stop) stayed open at the upstream for good. The
 * DELETE waits `waitMs` at most; closing the client then aborts it.
 */
async function closeUpstream(
  client: Client,
  transport: { sessionId?: string | undefined; terminateSession(): Promise<void> } | undefined,
  waitMs: number,
): Promise<void> {
  if (transport?.sessionId) {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      // Refused (405, a server without DELETE) or unreachable: nothing more to do than close.
      transport.terminateSession().catch(() => undefined),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, waitMs);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
  }
  await client.close().catch(() => undefined);
}
