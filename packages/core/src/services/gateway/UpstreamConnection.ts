import type { CallToolResult, Completion, CompletionRef, GetPromptResult, Prompt, ReadResourceResult } from './mcpWire.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { Logger } from '../../kernel/Logger.js';
import type { McpServerConfig } from '../../config/sections/mcpServers.js';
import type { OpenedUpstream } from './openUpstream.js';
import { upstreamRequest } from '../ai/upstreamFetch.js';
import type { UpstreamHttp } from './guardUpstream.js';
import type { CallOptions } from './callOptions.js';
import { UpstreamLister } from './UpstreamLister.js';
import { EMPTY_LISTS, LIST_KINDS, sameLists, type ListKind, type UpstreamLists } from './upstreamLists.js';
import { credentialValues } from './credentialValues.js';
import { ResourceSubscriptions } from './ResourceSubscriptions.js';
import type { ResourceSubscriber } from './ResourceSubscriber.js';
import { describe, isTimeout, upstreamFailure } from './upstreamFailure.js';
import { once } from '../../lib/once.js';

/**
 * What opens an upstream and runs a tools/call on it, loaded with the first connection: a server
 * with no MCP server configured or added never loads them (18 KB of the built core, about a fifth of
 * the gateway's code, which every server loaded at start: docs/performance.md, "Cold start").
 */
const openCode = once(() => import('./openUpstream.js'));
const callCode = once(() => import('./callOnUpstream.js'));

export type { ListKind, UpstreamLists } from './upstreamLists.js';

export type ConnectionState =
  | { kind: 'idle' }
  /** `lastError`: a reconnect after failures, with the last one's error (status pages keep showing it while it runs). */
  | { kind: 'connecting'; lastError?: string }
  | { kind: 'ready'; since: number }
  | { kind: 'failed'; error: string; retryAt: number; failures: number };

export type { CallOptions } from './callOptions.js';

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
/** How many times a failed list is asked again on one connection (after 1, 2, 5, 10 and 30 s). */
const RELIST_ATTEMPTS = 5;
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
  lists: UpstreamLists = EMPTY_LISTS;
  lastUsed = Date.now();
  /** Calls answered and failed since start, for status pages. */
  readonly counts = { calls: 0, errors: 0 };
  /** Who subscribed to which of its resources (resources/subscribe): subscribed at the upstream while anyone is. */
  private readonly subscriptions: ResourceSubscriptions;
  /** Requests running on the open client now; a retired connection closes when they have ended. */
  private inFlight = 0;
  private retiring = false;

  /** Credential values this connection sends or starts its process with (credentialValues), longest first; made on first use. */
  private secrets: string[] | undefined;

  /** Reads the upstream's lists. */
  private readonly lister: UpstreamLister;

  constructor(private readonly opts: UpstreamConnectionOptions) {
    this.lister = new UpstreamLister({
      server: opts.name,
      maxResultBytes: opts.maxResultBytes,
      timeoutMs: opts.server.timeoutMs,
      logger: opts.logger,
      scrub: (text) => this.scrub(text),
    });
    this.subscriptions = new ResourceSubscriptions({
      server: opts.name,
      timeoutMs: opts.server.timeoutMs,
      logger: opts.logger,
      scrub: (text) => this.scrub(text),
      run: (what, fn) => this.run(what, fn),
      opened: () => this.opened,
    });
  }

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
      const { openUpstream } = await openCode();
      opened = await openUpstream(this.opts.server, {
        headers: this.opts.headers,
        timeoutMs: this.timeoutMs,
        maxResultBytes: this.opts.maxResultBytes,
        ...(this.opts.http ? { fetch: this.opts.http.fetch } : {}),
        request: this.opts.http?.request ?? upstreamRequest,
        onClose: () => this.lost(opened, 'the connection closed'),
        onListChanged: (kind) => void this.refresh(kind),
        onResourceUpdated: (uri) => {
          this.subscriptions.updated(uri);
        },
      });
      if (this.closed) {
        await opened.close();
        throw new CoreError('UNAVAILABLE', `MCP server "${this.opts.name}" was removed`);
      }
      this.opened = opened;
      const before = this.lists;
      const { lists, failed } = await this.lister.all(opened);
      this.lists = lists;
      this.state = { kind: 'ready', since: Date.now() };
      for (const kind of failed) this.relistLater(opened, kind, 0);
      this.opts.logger.info('MCP upstream connected', { server: this.opts.name, tools: this.lists.tools.length });
      // A new session (a reconnect) holds none of the subscriptions the last one had.
      this.subscriptions.renew(opened);
      // Only the lists that differ from what was listed before the connect: a reconnect after a
      // crash usually lists the same. Announced anyway, a crash-looping stdio server (respawned
      // every 250 ms when it dies after initialize) sent every session three list_changed per
      // crash, each kept in its event store for replay and each making clients relist.
      for (const kind of LIST_KINDS) if (!sameLists(before, this.lists, kind)) this.opts.onChange(kind);
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

  /** Lists `kind` again (its list_changed, or a retry of a list that failed): on failure, tries again later. */
  private async refresh(kind: ListKind, attempt = 0): Promise<void> {
    const opened = this.opened;
    if (!opened) return;
    try {
      // The new list is awaited before the current lists are read: `{ ...this.lists, tools: await … }`
      // spread them before the await, so a list_changed heard while a connect was still listing
      // (server-everything sends tools/list_changed once initialized) put back the lists of before
      // the connect, none, over the connect's, and the upstream's prompts and resources vanished.
      if (kind === 'tools') {
        const tools = await this.lister.tools(opened);
        this.lists = { ...this.lists, tools };
      }
      if (kind === 'prompts') {
        const prompts = await this.lister.list<Prompt>(opened, 'prompts/list');
        this.lists = { ...this.lists, prompts };
      }
      if (kind === 'resources') {
        const update = await this.lister.resources(opened, this.lists.templates);
        this.lists = { ...this.lists, ...update };
      }
      this.opts.onChange(kind);
    } catch (err) {
      this.lister.failed(kind, err);
      this.relistLater(opened, kind, attempt + 1);
    }
  }

  /**
   * A list that failed on this connection (a timeout on a busy upstream, a malformed answer) is
   * asked again with the connect's backoff, a few times: without it the gateway showed none of
   * that list (or its stale one) until the upstream announced a change or the connection was
   * replaced, which for most upstreams is never. The retry stops with the connection.
   */
  private relistLater(opened: OpenedUpstream, kind: ListKind, attempt: number): void {
    if (attempt >= RELIST_ATTEMPTS) return;
    const wait = BACKOFF_MS[Math.min(attempt + 2, BACKOFF_MS.length - 1)]!;
    setTimeout(() => {
      if (this.opened === opened && !this.closed) void this.refresh(kind, attempt);
    }, wait).unref();
  }

  /**
   * Run `fn` on the open client, bounded by timeoutMs; failures become CoreErrors naming the server (never its answer's text when it is
   * garbage).
   */
  private async run<T>(what: string, fn: (o: OpenedUpstream) => Promise<T>): Promise<T> {
    // Held from before the connect: a connection retired while this call still waits for it to open serves it first.
    const release = this.acquire();
    try {
      return await this.runOpen(what, fn);
    } finally {
      release();
    }
  }

  /**
   * Keep this connection for a use that spans several steps (the gateway's call: connect, check
   * the tool, hold its price, call): a retire() meanwhile waits for the release.
   */
  acquire(): () => void {
    this.inFlight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inFlight--;
      if (this.retiring && this.inFlight === 0) void this.close();
    };
  }

  private async runOpen<T>(what: string, fn: (o: OpenedUpstream) => Promise<T>): Promise<T> {
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
      const { error, gone } = upstreamFailure(err, {
        server: this.opts.name,
        what,
        timeoutMs: this.timeoutMs,
        scrub: (t) => this.scrub(t),
      });
      // The HTTP upstream went away or restarted without our session: this connection is lost
      // (the call fails as usual, later ones fail fast), and a new one opens after the backoff.
      if (gone) this.lost(opened, gone);
      throw error;
    }
  }

  /**
   * Let this connection go once the calls in flight on it have ended (each is bounded by
   * timeoutMs): a per-user connection replaced by one with new credentials (a refreshed OAuth
   * token), evicted at gateway.maxUserConnections or idle. Closed at once, it failed the user's
   * other calls still running on it ("Connection closed"), such as a long tool call during which
   * a second call refreshed the token.
   */
  retire(): Promise<void> {
    this.retiring = true;
    return this.inFlight === 0 ? this.close() : Promise.resolve();
  }

  callTool(name: string, args: Record<string, unknown>, opts: CallOptions = {}): Promise<CallToolResult> {
    return this.run(`tools/call ${name}`, async (o) => {
      const { callOnUpstream } = await callCode();
      return callOnUpstream(
        o,
        this.lists.tools.find((t) => t.name === name),
        name,
        args,
        opts,
        {
          timeoutMs: this.timeoutMs,
          maxResultBytes: this.opts.maxResultBytes,
        },
      );
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

  /** completion/complete of one of its prompts or resource templates; nothing to offer when it does not complete. */
  complete(ref: CompletionRef, argument: { name: string; value: string }, context: Record<string, string>, signal?: AbortSignal) {
    return this.run('completion/complete', async (o): Promise<Completion> => {
      if (!o.client.getServerCapabilities()?.completions) return { values: [], total: 0, hasMore: false };
      const r = await o.client.complete(
        { ref, argument, ...(Object.keys(context).length > 0 ? { context: { arguments: context } } : {}) },
        { timeout: this.timeoutMs, ...(signal ? { signal } : {}) },
      );
      return r.completion as Completion;
    });
  }

  /** How many of its resources are subscribed at the upstream now (status pages). */
  get resourceSubscriptions(): number {
    return this.subscriptions.size;
  }

  /**
   * Subscribe `who` to one of its resources: the first subscriber subscribes at the upstream,
   * which must offer subscriptions (`resources.subscribe`); updates reach every subscriber of the
   * URI. Kept across reconnects.
   */
  subscribeResource(uri: string, who: ResourceSubscriber): Promise<void> {
    return this.subscriptions.subscribe(uri, who);
  }

  /** `who` no longer wants updates of `uri`; its last subscriber gone, the upstream subscription ends. */
  unsubscribeResource(uri: string, who: ResourceSubscriber): void {
    this.subscriptions.unsubscribe(uri, who);
  }

  /** Every subscription of `who` (its session ended). */
  unsubscribeAll(who: ResourceSubscriber): void {
    this.subscriptions.unsubscribeAll(who);
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
