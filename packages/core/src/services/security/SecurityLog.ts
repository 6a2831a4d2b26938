import { mkdir, open, rename, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { ResolvedConfig } from '../../config/schema.js';
import type { Logger } from '../../kernel/Logger.js';

/**
 * What happened:
 * - `auth_failed`: a presented credential was refused (bad, expired, wrong audience, unknown session, missing scope);
 * - `auth_required`: nothing was presented where authentication is required (the normal first step of an
 *   OAuth sign-in, so it is only `info`);
 * - `forbidden`: an identity lacks the rights (administrator procedures);
 * - `access_denied`: a workspace rule refused a path (traversal, blocked path, read-only, size);
 * - `rate_limited`: a request or tool call over one of our own limits (`mcp.rateLimiting`, `ai.validateProvider`);
 * - `key_refused`: an API key's own rules or limits refused a call (keyRefusalEvent.ts: its tools,
 *   resource, provider and model rules, requests and tokens per minute, concurrent calls, budget);
 * - `upstream_rate_limited`: an AI provider answered 429 (its quota, not ours: worth watching,
 *   but not an abuse signal about the caller).
 */
export type SecurityEventType =
  | 'auth_failed'
  | 'auth_required'
  | 'forbidden'
  | 'access_denied'
  | 'rate_limited'
  | 'key_refused'
  | 'upstream_rate_limited';
export type SecuritySeverity = 'debug' | 'info' | 'warn' | 'error';

export interface SecurityEvent {
  type: SecurityEventType;
  /** Machine-readable reason: the error code (INVALID_TOKEN, INSUFFICIENT_SCOPE, ACCESS_DENIED, RATE_LIMITED...). */
  reason: string;
  /** Short client-safe text (the error message); never a credential. */
  message?: string;
  /** Entry point: 'mcp', 'trpc', 'rpc', 'openai', 'anthropic', 'oauth', 'health' or 'metrics'. */
  transport: string;
  ip?: string;
  /** Subject of the caller when one was established. */
  sub?: string;
  /** Procedure path, MCP method or tool name. */
  path?: string;
  /** Small extra facts (the denied workspace path, the limit that was hit). */
  detail?: Record<string, string | number | boolean>;
}

/** `mcp.securityLogging`, resolved. */
export interface SecurityLogSettings {
  enabled: boolean;
  /** Least severity recorded. */
  logLevel: SecuritySeverity;
  logToFile: boolean;
  /** JSON-lines file; created with mode 0600. */
  logFilePath?: string;
  /** Rotate the file past this size (bytes). Default 64 MiB. */
  maxFileBytes?: number;
  /** Rotated files kept (`<file>.1` is the newest). Default 5. */
  maxFiles?: number;
}

const SEVERITY_RANK: Record<SecuritySeverity, number> = { debug: 10, info: 20, warn: 30, error: 40 };
const SEVERITY: Record<SecurityEventType, SecuritySeverity> = {
  auth_failed: 'warn',
  auth_required: 'info',
  forbidden: 'warn',
  access_denied: 'warn',
  rate_limited: 'warn',
  key_refused: 'warn',
  upstream_rate_limited: 'warn',
};
/** Lines waiting for the file; beyond this, events are dropped (and counted) rather than piling up in memory. */
const MAX_PENDING = 10_000;
const MAX_TEXT = 300;
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;
const DEFAULT_MAX_FILES = 5;

const clip = (s: string) => (s.length > MAX_TEXT ? s.slice(0, MAX_TEXT) + '…' : s);

/**
 * Structured security events: one JSON object each, to the runtime logger and, with
 * `logToFile`, appended to a JSON-lines file. Callers pass reason codes and client-safe
 * messages; tokens, keys and request bodies never go in.
 */
export class SecurityLog {
  private readonly minRank: number;
  private readonly seen = new WeakSet<object>();
  private file: Promise<FileHandle | null> | undefined;
  private queue: Promise<void> = Promise.resolve();
  private pending = 0;
  private dropped = 0;
  private fileFailed = false;
  private closed = false;
  /** Bytes in the open file, as far as this process knows (read at open, added to per write). */
  private size = 0;

  constructor(
    readonly settings: SecurityLogSettings,
    private readonly logger: Logger,
  ) {
    this.minRank = SEVERITY_RANK[settings.logLevel];
  }

  /** From the resolved config; the file defaults to `<storage.dir>/security.log`. */
  static fromConfig(config: ResolvedConfig, logger: Logger): SecurityLog {
    const s = config.mcp.securityLogging;
    return new SecurityLog({ ...s, logFilePath: s.logFilePath ?? path.join(config.storage.dir, 'security.log') }, logger);
  }

  /** Would an event of this type be recorded? (Lets callers skip building it.) */
  wants(type: SecurityEventType): boolean {
    return this.settings.enabled && SEVERITY_RANK[SEVERITY[type]] >= this.minRank;
  }

  record(event: SecurityEvent): void {
    if (!this.wants(event.type)) return;
    const level = SEVERITY[event.type];
    const fields: Record<string, unknown> = { event: 'security', type: event.type, reason: event.reason, transport: event.transport };
    if (event.message) fields.message = clip(event.message);
    if (event.ip) fields.ip = event.ip;
    if (event.sub) fields.sub = clip(event.sub);
    if (event.path) fields.path = clip(event.path);
    if (event.detail) {
      for (const [k, v] of Object.entries(event.detail)) fields[k] = typeof v === 'string' ? clip(v) : v;
    }
    this.logger[level]('security event', fields);
    if (this.settings.logToFile && !this.closed) this.append({ time: new Date().toISOString(), level, ...fields });
  }

  /**
   * Record at most once per `scope` (the request): a tRPC batch of ten calls with one bad token
   * is one auth failure, not ten.
   */
  recordOnce(scope: object, event: SecurityEvent): void {
    if (this.seen.has(scope)) return;
    this.seen.add(scope);
    this.record(event);
  }

  /** Wait for pending file writes and close the file. */
  async close(): Promise<void> {
    this.closed = true;
    await this.queue;
    const fh = await this.file;
    await fh?.close().catch(() => undefined);
  }

  private append(line: Record<string, unknown>): void {
    if (this.pending >= MAX_PENDING) {
      this.dropped++;
      return;
    }
    this.pending++;
    const text = JSON.stringify(line) + '\n';
    this.queue = this.queue.then(async () => {
      try {
        let fh = await this.openFile();
        if (!fh) return;
        if (this.size + Buffer.byteLength(text) > this.maxBytes) fh = await this.rotate(fh, Buffer.byteLength(text));
        if (!fh) return;
        if (this.dropped > 0) {
          const n = this.dropped;
          this.dropped = 0;
          await this.write(
            fh,
            JSON.stringify({ time: new Date().toISOString(), level: 'error', event: 'security', type: 'events_dropped', count: n }) + '\n',
          );
        }
        await this.write(fh, text);
      } catch (err) {
        this.reportFileError(err);
      } finally {
        this.pending--;
      }
    });
  }

  private get maxBytes(): number {
    return this.settings.maxFileBytes ?? DEFAULT_MAX_BYTES;
  }

  private async write(fh: FileHandle, text: string): Promise<void> {
    await fh.write(text);
    this.size += Buffer.byteLength(text);
  }

  /**
   * The file is full: `<file>.N-1` … `<file>.1` move one up (the oldest, `<file>.N`, is replaced),
   * the file becomes `<file>.1` and a new one is opened. A file an outside tool truncated meanwhile
   * (logrotate's `copytruncate`) is not full: its real size is read first. A rename that fails is
   * reported once and writing goes on in the open file.
   */
  private async rotate(fh: FileHandle, incoming: number): Promise<FileHandle | null> {
    this.size = (await fh.stat()).size;
    if (this.size === 0 || this.size + incoming <= this.maxBytes) return fh;
    const file = this.settings.logFilePath!;
    try {
      for (let i = (this.settings.maxFiles ?? DEFAULT_MAX_FILES) - 1; i >= 1; i--)
        await rename(`${file}.${i}`, `${file}.${i + 1}`).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'ENOENT') throw err;
        });
      await rename(file, `${file}.1`);
    } catch (err) {
      this.reportFileError(err);
      return fh;
    }
    await fh.close().catch(() => undefined);
    this.file = undefined;
    return this.openFile();
  }

  private openFile(): Promise<FileHandle | null> {
    this.file ??= (async () => {
      const file = this.settings.logFilePath!;
      try {
        await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
        // Mode applies when the file is created: readable by the service user only.
        const fh = await open(file, 'a', 0o600);
        this.size = (await fh.stat()).size;
        return fh;
      } catch (err) {
        this.reportFileError(err);
        return null;
      }
    })();
    return this.file;
  }

  private reportFileError(err: unknown): void {
    if (this.fileFailed) return;
    this.fileFailed = true;
    this.logger.error('security log file cannot be written; events still go to the server log', {
      file: this.settings.logFilePath,
      error: err instanceof Error ? err.message : String(err),
    });
  }
}
