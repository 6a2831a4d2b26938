import type { Client } from '@modelcontextprotocol/client';
import type { CallToolResult, GetPromptResult, Prompt, ReadResourceResult, Resource, Tool } from './mcpWire.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { Logger } from '../../kernel/Logger.js';
import type { McpServerConfig } from '../../config/sections/mcpServers.js';
import { openUpstream, type OpenedUpstream } from './openUpstream.js';
import { postToolCall, type ServerRequestHandler } from './postToolCall.js';
import { upstreamRequest } from '../ai/upstreamFetch.js';
import type { UpstreamHttp } from './guardUpstream.js';

/** The SDK's own type of a listed tool: the definitions we keep are the client's values (mcpWire.ts). */
type SdkToolDefinition = NonNullable<NonNullable<Parameters<Client['callTool']>[1]>['toolDefinition']>;

/** What an upstream offers, as last listed (refreshed on its list_changed notifications). */
export interface UpstreamLists {
  tools: Tool[];
  prompts: Prompt[];
  resources: Resource[];
}

export type ListKind = 'tools' | 'prompts' | 'resources';

export type ConnectionState =
  | { kind: 'idle' }
  /** `lastError`: a reconnect after failures, with the last one's error (status pages keep showing it while it runs). */
  | { kind: 'connecting'; lastError?: string }
  | { kind: 'ready'; since: number }
  | { kind: 'failed'; error: string; retryAt: number; failures: number };

export interface CallOptions {
  signal?: AbortSignal;
  onProgress?: (progress: number, total: number | undefined, message: string | undefined) => void;
  /**
   * The caller's MCP client, for what an upstream asks it during the call (sampling, elicitation):
   * absent where there is none (/rpc, /trpc), and then the upstream is told so.
   */
  onRequest?: ServerRequestHandler;
}

export interface UpstreamConnectionOptions {
  name: string;
  server: McpServerConfig;
  headers: Record<string, string>;
  logger: Logger;
  maxResultBytes: number;
  /** The SSRF-guarded fetch and request (remote servers, guardUpstream.ts); absent: Node's client unguarded. */
  http?: UpstreamHttp;
  /** What this connection offers changed: one list (its list_changed, or a connect that listed it differently). */
  onChange: (kind?: ListKind) => void;
  /** Reconnect by itself after a loss (shared connections); per-user ones reconnect on their next use. */
  reconnect: 'eager' | 'onUse';
}

const BACKOFF_MS = [250, 500, 1000, 2000, 5000, 10_000, 30_000];
const EMPTY: UpstreamLists = { tools: [], prompts: [], resources: [] };
const LIST_KINDS: readonly ListKind[] = ['tools', 'prompts', 'resources'];

/** The same definitions in the same order (an upstream's lists are plain JSON). */
const sameList = (a: readonly unknown[], b: readonly unknown[]): boolean =>
  a === b || (a.length === b.length && JSON.stringify(a) === JSON.stringify(b));

/** An SDK error code for a timed-out request (SdkErrorCode.RequestTimeout). */
const isTimeout = (err: unknown): boolean =>
  (err as { code?: unknown } | null)?.code === 'REQUEST_TIMEOUT' || /timed? ?out/i.test((err as Error | null)?.message ?? '');

/**
 * One client connection to one upstream (shared, or one user's). Connects on first use or at
 * start, keeps the upstream's lists, and recovers: when the process dies or the HTTP session is
 * lost, calls fail at once with a clear error while it waits out a backoff (250 ms doubling to
 * 30 s), then it connects again (a new stdio process, a new HTTP session). Calls are bounded by
 * the server's `timeoutMs` and results by `gateway.maxResultBytes`.
 */
export class UpstreamConnection {
  private opened: OpenedUpstream | undefined;
  private connecting: Promise<OpenedUpstream> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  state: ConnectionState = { kind: 'idle' };
  lists: UpstreamLists = EMPTY;
  lastUsed = Date.now();
  /** Calls answered and failed since start, for status pages. */
  readonly counts = { calls: 0, errors: 0 };

  /** Credential values this connection sends or starts its process with (credentialValues), longest first; made on first use. */
  private secrets: string[] | undefined;

  constructor(private readonly opts: UpstreamConnectionOptions) {}

  /**
   * An upstream's text as it may be passed on (errors, the status pages' last error): without the
   * credentials this connection holds. An upstream that echoes a request's headers in its error
   * body (many do: "invalid token: <token>") would otherwise show the configured shared key to
   * every caller of the server, and to `gateway.listServers`.
   */
  private scrub(text: string): string {
    this.secrets ??= credentialValues(this.opts.headers, this.opts.server.type === 'stdio' ? this.opts.server.env : undefined);
    let out = text;
    for (const secret of this.secrets) if (out.includes(secret)) out = out.replaceAll(secret, '[redacted]');
    return out;
  }

  get pid(): number | null {
    return this.opened?.pid ?? null;
  }

  get stderrTail(): string {
    return this.opened?.stderrTail() ?? '';
  }

  private get timeoutMs(): number {
    return this.opts.server.timeoutMs;
  }

  /** Connected and listed, connecting first if needed; fails fast while a failed connection waits out its backoff. */
  async ready(): Promise<void> {
    await this.open();
  }

  // Private: the SDK client it returns is an optional peer's type, kept out of the published declarations (mcpWire.ts).
  private async open(): Promise<OpenedUpstream> {
    this.lastUsed = Date.now();
    if (this.opened) return this.opened;
    if (this.closed) throw new CoreError('UNAVAILABLE', `MCP server "${this.opts.name}" was removed`);
    const s = this.state;
    if (s.kind === 'failed' && Date.now() < s.retryAt && !this.connecting) {
      throw new CoreError(
        'UNAVAILABLE',
        `MCP server "${this.opts.name}" is unavailable (${s.error}); retrying in ${Math.ceil((s.retryAt - Date.now()) / 1000)} s`,
        { details: { reason: 'upstream_unavailable', server: this.opts.name } },
      );
    }
    return this.connectNow();
  }

  /** Connects now, or joins the connect already running. */
  private connectNow(): Promise<OpenedUpstream> {
    this.connecting ??= this.connect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async connect(): Promise<OpenedUpstream> {
    const s = this.state;
    const failures = s.kind === 'failed' ? s.failures : 0;
    this.state = s.kind === 'failed' ? { kind: 'connecting', lastError: s.error } : { kind: 'connecting' };
    let opened: OpenedUpstream | undefined;
    try {
      opened = await openUpstream(this.opts.server, {
        headers: this.opts.headers,
        timeoutMs: this.timeoutMs,
        maxResultBytes: this.opts.maxResultBytes,
        ...(this.opts.http ? { fetch: this.opts.http.fetch } : {}),
        request: this.opts.http?.request ?? upstreamRequest,
        onClose: () => this.lost(opened, 'the connection closed'),
        onListChanged: (kind) => void this.refresh(kind),
      });
      if (this.closed) {
        await opened.close();
        throw new CoreError('UNAVAILABLE', `MCP server "${this.opts.name}" was removed`);
      }
      this.opened = opened;
      const before = this.lists;
      this.lists = await this.listAll(opened);
      this.state = { kind: 'ready', since: Date.now() };
      this.opts.logger.info('MCP upstream connected', { server: this.opts.name, tools: this.lists.tools.length });
      // Only the lists that differ from what was listed before the connect: a reconnect after a
      // crash usually lists the same. Announced anyway, a crash-looping stdio server (respawned
      // every 250 ms when it dies after initialize) sent every session three list_changed per
      // crash, each kept in its event store for replay and each making clients relist.
      for (const kind of LIST_KINDS) if (!sameList(before[kind], this.lists[kind])) this.opts.onChange(kind);
      return opened;
    } catch (err) {
      if (opened && this.opened === opened) this.opened = undefined;
      await opened?.close();
      const message = this.scrub(describe(err, this.timeoutMs));
      this.fail(message, failures + 1);
      throw new CoreError(
        isTimeout(err) ? 'UPSTREAM_TIMEOUT' : 'UNAVAILABLE',
        `MCP server "${this.opts.name}" is unavailable (${message})`,
        { details: { reason: 'upstream_unavailable', server: this.opts.name } },
      );
    }
  }

  private fail(error: string, failures: number): void {
    const wait = BACKOFF_MS[Math.min(failures - 1, BACKOFF_MS.length - 1)]!;
    this.state = { kind: 'failed', error, retryAt: Date.now() + wait, failures };
    this.opts.logger.warn('MCP upstream unavailable', { server: this.opts.name, error, retryInMs: wait });
    if (this.opts.reconnect === 'eager' && !this.closed) {
      clearTimeout(this.timer);
      // The timer is the retry: it connects without open()'s "still backing off" check, which a
      // timer may fire just before (Node's timers run on the loop's cached clock, retryAt on
      // Date.now()); refused there, the connection stayed failed until a call came.
      this.timer = setTimeout(() => {
        if (!this.opened && !this.closed) void this.connectNow().catch(() => undefined);
      }, wait);
      this.timer.unref();
    }
  }

  /** The connection `opened` went away (process exit, session lost): forget it and recover. */
  private lost(opened: OpenedUpstream | undefined, why: string): void {
    if (!opened || this.opened !== opened || this.closed) return;
    this.opened = undefined;
    // What the old client still holds goes too: a session the upstream may still know (one
    // socket was reset, the server is up) with its GET stream, left open beside the new one.
    void opened.close();
    // Its tools stay listed (calls fail fast until it is back): the lists did not change.
    this.fail(why, 1);
  }

  private async listAll(opened: OpenedUpstream): Promise<UpstreamLists> {
    const caps = opened.client.getServerCapabilities() ?? {};
    const opts = { timeout: this.timeoutMs };
    const [tools, prompts, resources] = await Promise.all([
      caps.tools ? opened.client.listTools(undefined, opts).then((r) => r.tools) : [],
      caps.prompts
        ? opened.client
            .listPrompts(undefined, opts)
            .then((r) => r.prompts)
            .catch(() => [])
        : [],
      caps.resources
        ? opened.client
            .listResources(undefined, opts)
            .then((r) => r.resources)
            .catch(() => [])
        : [],
    ]);
    return { tools, prompts, resources };
  }

  private async refresh(kind: ListKind): Promise<void> {
    const opened = this.opened;
    if (!opened) return;
    try {
      const opts = { timeout: this.timeoutMs, cacheMode: 'refresh' as const };
      if (kind === 'tools') this.lists = { ...this.lists, tools: (await opened.client.listTools(undefined, opts)).tools };
      if (kind === 'prompts') this.lists = { ...this.lists, prompts: (await opened.client.listPrompts(undefined, opts)).prompts };
      if (kind === 'resources') this.lists = { ...this.lists, resources: (await opened.client.listResources(undefined, opts)).resources };
      this.opts.onChange(kind);
    } catch (err) {
      this.opts.logger.debug('MCP upstream list refresh failed', {
        server: this.opts.name,
        kind,
        error: this.scrub(describe(err, this.timeoutMs)),
      });
    }
  }

  /**
   * Run `fn` on the open client, bounded by timeoutMs; failures become CoreErrors naming the server (never its answer's text when it is
   * garbage).
   */
  private async run<T>(what: string, fn: (o: OpenedUpstream) => Promise<T>): Promise<T> {
    const opened = await this.open();
    this.counts.calls++;
    try {
      const result = await fn(opened);
      const size = JSON.stringify(result ?? null).length;
      if (size > this.opts.maxResultBytes) {
        throw new CoreError(
          'PAYLOAD_TOO_LARGE',
          `MCP server "${this.opts.name}" answered ${what} with ${size} bytes, more than gateway.maxResultBytes (${this.opts.maxResultBytes})`,
          { details: { reason: 'upstream_result_too_large', server: this.opts.name } },
        );
      }
      return result;
    } catch (err) {
      this.counts.errors++;
      // Cut while it was read (boundedFetch): a read that failed, or the JSON-RPC error that stands for a cut SSE answer.
      const cut = (err as { data?: { reason?: unknown } } | null)?.data?.reason === 'upstream_result_too_large';
      if (cut || (err instanceof CoreError && err.details?.reason === 'upstream_result_too_large' && !err.details.server))
        throw new CoreError('PAYLOAD_TOO_LARGE', `MCP server "${this.opts.name}" answered ${what} with ${(err as Error).message}`, {
          details: { reason: 'upstream_result_too_large', server: this.opts.name },
        });
      if (err instanceof CoreError) throw err;
      // The HTTP upstream went away or restarted without our session: this connection is lost
      // (the call fails as usual, later ones fail fast), and a new one opens after the backoff.
      const gone = connectionGone(err);
      if (gone) this.lost(opened, gone);
      if ((err as { name?: string } | null)?.name === 'AbortError') throw new CoreError('CANCELLED', 'request cancelled');
      // The credentials were refused (a per-user token revoked at its server): the gateway asks for fresh ones.
      if (httpStatusOf(err) === 401)
        throw new CoreError('UPSTREAM_ERROR', `MCP server "${this.opts.name}" refused the credentials on ${what}`, {
          details: { reason: 'upstream_unauthorized', server: this.opts.name },
        });
      if (isTimeout(err))
        throw new CoreError('UPSTREAM_TIMEOUT', `MCP server "${this.opts.name}" did not answer ${what} within ${this.timeoutMs} ms`, {
          details: { reason: 'upstream_timeout', server: this.opts.name },
        });
      // A protocol error the upstream sent (its message is its own, about its own tool): passed on, bounded.
      const code = (err as { code?: unknown }).code;
      const message = err instanceof Error ? this.scrub(err.message.slice(0, 500)) : 'failed';
      if (typeof code === 'number')
        throw new CoreError('UPSTREAM_ERROR', `MCP server "${this.opts.name}" refused ${what}: ${message}`, {
          details: { reason: 'upstream_error', server: this.opts.name, upstreamCode: code },
        });
      throw new CoreError('UPSTREAM_ERROR', `MCP server "${this.opts.name}" failed on ${what}: ${message}`, {
        details: { reason: 'upstream_error', server: this.opts.name },
      });
    }
  }

  callTool(name: string, args: Record<string, unknown>, opts: CallOptions = {}): Promise<CallToolResult> {
    return this.run(`tools/call ${name}`, async (o) => {
      // A 2025 Streamable HTTP session: our own POST (the SDK client's transport cost most of a call).
      const session = o.httpSession();
      if (session) {
        return postToolCall(session, name, args, {
          timeoutMs: this.timeoutMs,
          maxBytes: this.opts.maxResultBytes,
          ...opts,
        });
      }
      const definition = this.lists.tools.find((t) => t.name === name);
      const result = await o.client.callTool(
        { name, arguments: args },
        {
          timeout: this.timeoutMs,
          // The definition we listed: without it the client relists the upstream's tools before a
          // call whose list carried no cache hint (for output validation and header mirroring).
          ...(definition ? { toolDefinition: definition as SdkToolDefinition } : {}),
          ...(opts.signal ? { signal: opts.signal } : {}),
          ...(opts.onProgress
            ? {
                onprogress: (p: { progress: number; total?: number; message?: string }) => opts.onProgress!(p.progress, p.total, p.message),
              }
            : {}),
        },
      );
      return result as CallToolResult;
    });
  }

  getPrompt(name: string, args: Record<string, string>, signal?: AbortSignal): Promise<GetPromptResult> {
    return this.run(`prompts/get ${name}`, (o) =>
      o.client.getPrompt({ name, arguments: args }, { timeout: this.timeoutMs, ...(signal ? { signal } : {}) }),
    );
  }

  readResource(uri: string, signal?: AbortSignal): Promise<ReadResourceResult> {
    return this.run('resources/read', (o) => o.client.readResource({ uri }, { timeout: this.timeoutMs, ...(signal ? { signal } : {}) }));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    const opened = this.opened;
    this.opened = undefined;
    this.state = { kind: 'idle' };
    await opened?.close();
  }
}

/**
 * Why an error means the HTTP connection itself is gone, or null: the server is unreachable, or it
 * no longer knows our session (404 per the spec; some servers, server-everything among them,
 * answer 400 "No valid session ID provided" after a restart). The SDK client does not reconnect
 * by itself, and no close event comes: without this, every later call would repeat the error.
 */
function connectionGone(err: unknown): string | null {
  const status = httpStatusOf(err);
  const message = err instanceof Error ? `${err.message} ${String((err.cause as Error | undefined)?.message ?? '')}` : '';
  if (status === 404 || (status === 400 && /session/i.test(message)) || /no valid session/i.test(message))
    return 'the upstream lost the session';
  if (/fetch failed|ECONNREFUSED|ECONNRESET|socket hang up|other side closed/i.test(message)) return 'the upstream is unreachable';
  return null;
}

/** The HTTP status of an SDK transport error (SdkHttpError carries it as `status`). */
function httpStatusOf(err: unknown): number | undefined {
  const status = (err as { status?: unknown } | null)?.status;
  return typeof status === 'number' ? status : undefined;
}

/**
 * The secret values of a connection's headers and environment (6 characters or more), with a
 * scheme's credential alone too (`Bearer <token>` → `<token>`).
 */
function credentialValues(headers: Record<string, string>, env: Record<string, string> | undefined): string[] {
  const values = new Set<string>();
  for (const v of [...Object.values(headers), ...Object.values(env ?? {})]) {
    const value = v.trim();
    if (value.length >= 6) values.add(value);
    const credential = /^(?:bearer|basic|token)\s+(\S{6,})$/i.exec(value)?.[1];
    if (credential) values.add(credential);
  }
  return [...values].sort((a, b) => b.length - a.length);
}

function describe(err: unknown, timeoutMs: number): string {
  if (isTimeout(err)) return `no answer within ${timeoutMs} ms`;
  if (err instanceof CoreError) return err.message;
  const msg = err instanceof Error ? err.message : String(err);
  return msg.replace(/\s+/g, ' ').slice(0, 300);
}
