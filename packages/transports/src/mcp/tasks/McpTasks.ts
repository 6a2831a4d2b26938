import { randomBytes, randomUUID } from 'node:crypto';
import {
  isInputRequiredResult,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  type CallToolResult,
  type InputRequiredResult,
} from '@modelcontextprotocol/server';
import { InFlight, type LongRunningMeta, type Logger, type ProcedureMeta, type Signals, type Storage } from '@ai-backend/core/internal';
import { createTaskResult, TASKS_EXTENSION, TaskStore, TERMINAL, type TaskRecord } from './TaskStore.js';
import { ANONYMOUS_TASK_OWNER } from '../requestStateSeal.js';

/** What one run of a tool comes to, as a task sees it. */
export type ToolOutcome =
  | { kind: 'result'; result: CallToolResult | InputRequiredResult }
  /** A protocol-level failure (an internal error): the task is `failed`. */
  | { kind: 'failed'; error: { code: number; message: string; data?: Record<string, unknown> } };

/** One round of a task's tool: the answers it gets, and its requestState (already verified, or sealed as the tool returned it). */
export interface TaskRound {
  taskId: string;
  inputResponses?: Record<string, unknown>;
  verifiedState?: unknown;
  sealedState?: string;
}

/** Runs the tool once under the given signal. */
export type RunTool = (signal: AbortSignal, round: TaskRound) => Promise<ToolOutcome>;

export interface McpTasksOptions {
  /** Default task TTL (ms) when the procedure sets none. */
  ttlMs?: number;
  /** The poll interval we suggest to clients. */
  pollIntervalMs?: number;
  /** How often a running task re-reads its record to notice a cancel made on another instance (a lost or absent signal). */
  cancelPollMs?: number;
  /** Tasks one caller may have running on one instance at once. */
  maxRunningPerCaller?: number;
  /** A result larger than this (serialized) fails the task instead of being stored. */
  maxResultBytes?: number;
}

const CANCEL_TOPIC = 'mcp.task.cancel';
/** inputBeforeTask: how long the first round may take and still answer input-required synchronously. */
const INPUT_WINDOW_MS = 150;

export function longRunningOf(
  meta: ProcedureMeta | undefined,
): (Required<Pick<LongRunningMeta, 'taskSupport'>> & LongRunningMeta) | undefined {
  const lr = meta?.longRunning;
  if (!lr) return undefined;
  return lr === true ? { taskSupport: 'optional' } : { ...lr, taskSupport: lr.taskSupport ?? 'optional' };
}

/** The client negotiated the Tasks extension (per request on 2026-07-28: its `_meta` envelope). */
export function declaresTasks(caps: Record<string, unknown> | undefined): boolean {
  const ext = caps?.extensions as Record<string, unknown> | undefined;
  return !!ext && typeof ext === 'object' && ext[TASKS_EXTENSION] !== undefined;
}

export function missingTasksCapability(what: string): MissingRequiredClientCapabilityError {
  return new MissingRequiredClientCapabilityError(
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    `${what} needs the ${TASKS_EXTENSION} extension: declare it under capabilities.extensions`,
  );
}

/** tasks/get, tasks/update and tasks/cancel of an unknown (expired, or another caller's) task. */
function unknownTask(taskId: string): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, `unknown task: ${taskId.slice(0, 100)}`, { taskId: taskId.slice(0, 100) });
}

/** What the tasks use: the shared store their records live in, cross-instance signals (cancels) and a log. */
export interface McpTasksDeps {
  readonly shared: Storage;
  readonly signals: Signals;
  readonly logger: Logger;
}

/**
 * The MCP Tasks extension (SEP-2663) for procedures marked `longRunning`, shared by every
 * 2026-07-28 request of this instance. A task lives in storage (TaskStore), so any instance
 * answers tasks/get, resumes a task waiting for input (the tool runs again where the answer
 * arrives) and cancels it; the instance running the tool learns of a cancel at once through
 * the server's signals (Redis pub/sub) or, without Redis, by re-reading the record every
 * `cancelPollMs`. Money: the tool runs through the same invoke seam as any call, so a run that
 * is aborted releases its hold and a run that finishes is charged once; a cancel that arrives
 * after the run finished changes nothing (the task stays completed).
 */
export class McpTasks {
  readonly store: TaskStore;
  private readonly ttlMs: number;
  private readonly pollIntervalMs: number;
  private readonly cancelPollMs: number;
  private readonly maxRunningPerCaller: number;
  private readonly maxResultBytes: number;
  /** Runs on this instance: taskId → its abort controller and the caller it counts against (maxRunningPerCaller). */
  private readonly local = new Map<string, { abort: AbortController; caller: string }>();
  /** The last statusMessage write of each task, while it is in flight (settle waits for it). */
  private readonly statusWrites = new Map<string, Promise<unknown>>();
  /** Runs of this instance still going, so close() can let aborted ones release their holds first. */
  private readonly inFlight = new InFlight();
  private readonly unsubscribe: () => void;
  private readonly poller: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly deps: McpTasksDeps,
    opts: McpTasksOptions = {},
  ) {
    this.store = new TaskStore(deps.shared);
    this.ttlMs = opts.ttlMs ?? 60 * 60_000;
    this.pollIntervalMs = opts.pollIntervalMs ?? 500;
    this.cancelPollMs = opts.cancelPollMs ?? 1000;
    this.maxRunningPerCaller = opts.maxRunningPerCaller ?? 32;
    this.maxResultBytes = opts.maxResultBytes ?? 4 * 1024 * 1024;
    this.unsubscribe = deps.signals.subscribe(CANCEL_TOPIC, (taskId) => this.local.get(taskId)?.abort.abort());
    this.poller = setInterval(() => void this.pollCancels(), this.cancelPollMs);
    this.poller.unref();
  }

  /**
   * A cancel made on another instance is in storage: without Redis signals this is how we learn
   * of it, and with them it catches a notice lost while Redis was unreachable.
   */
  private async pollCancels(): Promise<void> {
    if (this.local.size === 0) return;
    for (const [taskId, run] of [...this.local]) {
      const rec = await this.store.get(taskId).catch(() => undefined);
      if (rec?.status === 'cancelled') run.abort.abort();
    }
  }

  private runningFor(caller: string): number {
    let n = 0;
    for (const r of this.local.values()) if (r.caller === caller) n++;
    return n;
  }

  /**
   * tools/call of a long-running tool by a client that negotiated the extension: create the
   * task (stored before we answer, so an immediate tasks/get finds it), start the tool, and
   * answer with the CreateTaskResult. With `inputBeforeTask`, a first round that asks for input
   * within a short window is answered synchronously instead, and no task is created.
   */
  async start(opts: {
    /** Who may read, answer and cancel the task (taskOwnerOf): a subject, or ANONYMOUS_TASK_OWNER (whoever holds its id). */
    owner: string;
    /** Whom the run counts against for maxRunningPerCaller: the subject, or the client address when anonymous. */
    runningKey: string;
    tool: string;
    arguments: Record<string, unknown>;
    meta: LongRunningMeta;
    run: RunTool;
    inputResponses?: Record<string, unknown>;
    requestState?: unknown;
  }): Promise<Record<string, unknown>> {
    if (this.closed)
      throw new ProtocolError(
        ProtocolErrorCode.InternalError,
        'this server instance is shutting down: retry (another instance will take the task)',
      );
    if (this.runningFor(opts.runningKey) >= this.maxRunningPerCaller) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidRequest,
        `too many running tasks (at most ${this.maxRunningPerCaller} per caller): wait for one to finish or cancel one`,
      );
    }
    // An anonymous task belongs to whoever holds its id: a 256-bit handle, not a UUID.
    const taskId = opts.owner === ANONYMOUS_TASK_OWNER ? `anon-${randomBytes(32).toString('base64url')}` : randomUUID();
    const abort = new AbortController();
    this.local.set(taskId, { abort, caller: opts.runningKey });
    const first = opts
      .run(abort.signal, { inputResponses: opts.inputResponses, verifiedState: opts.requestState, taskId })
      .catch((err: unknown): ToolOutcome => this.crashed(err));

    if (opts.meta.inputBeforeTask) {
      const early = await Promise.race([first, new Promise<undefined>((r) => void setTimeout(r, INPUT_WINDOW_MS))]);
      if (early?.kind === 'result' && isInputRequiredResult(early.result)) {
        this.local.delete(taskId);
        return early.result as unknown as Record<string, unknown>;
      }
    }

    const now = new Date();
    const ttlMs = Math.max(1000, Math.floor(opts.meta.ttlMs ?? this.ttlMs));
    const rec: TaskRecord = {
      taskId,
      owner: opts.owner,
      tool: opts.tool,
      status: 'working',
      createdAt: now.toISOString(),
      lastUpdatedAt: now.toISOString(),
      expiresAt: now.getTime() + ttlMs,
      ttlMs,
      pollIntervalMs: this.pollIntervalMs,
      run: 0,
    };
    try {
      await this.store.create(rec);
    } catch (err) {
      abort.abort();
      this.local.delete(taskId);
      throw err;
    }
    this.track(first.then((outcome) => this.settle(taskId, 0, outcome, abort.signal, opts.arguments)));
    return createTaskResult(rec);
  }

  /** A run that threw outside the invoke seam (a bug): the task fails, nothing leaks to the client. */
  private crashed(err: unknown): ToolOutcome {
    this.deps.logger.error('MCP task run failed', { error: err instanceof Error ? err.message : String(err) });
    return { kind: 'failed', error: { code: ProtocolErrorCode.InternalError, message: 'internal error' } };
  }

  /** A run until its result is stored, for drain() and close() to wait on; a settle that throws (a bug) is logged, never silent. */
  private track(run: Promise<void>): void {
    this.inFlight.track(
      run.catch((err: unknown) =>
        this.deps.logger.error('MCP task could not be settled', { error: err instanceof Error ? err.message : String(err) }),
      ),
    );
  }

  /** Record what a run came to, unless the task moved on meanwhile (cancelled, or another run). */
  private async settle(
    taskId: string,
    run: number,
    outcome: ToolOutcome,
    signal: AbortSignal,
    args: Record<string, unknown>,
  ): Promise<void> {
    this.local.delete(taskId);
    await this.statusWrites.get(taskId);
    this.statusWrites.delete(taskId);
    if (signal.aborted) return; // cancelled (the canceller set the status) or shutting down (close() did)
    let next: (cur: TaskRecord) => TaskRecord;
    if (outcome.kind === 'failed') {
      next = (cur) => ({
        ...cur,
        status: 'failed',
        error: outcome.error,
        inputRequests: undefined,
        answered: undefined,
        requestState: undefined,
        arguments: undefined,
      });
    } else if (isInputRequiredResult(outcome.result)) {
      const { inputRequests, requestState } = outcome.result as InputRequiredResult & { requestState?: string };
      next = (cur) => ({
        ...cur,
        status: 'input_required',
        inputRequests: inputRequests as Record<string, unknown>,
        answered: {},
        requestState,
        arguments: args,
      });
    } else {
      const result = outcome.result as Record<string, unknown>;
      const size = jsonBytes(result);
      const refused =
        size === undefined
          ? 'the result cannot be stored: it is not JSON (a BigInt, a cycle)'
          : size > this.maxResultBytes
            ? `the result (${size} bytes) is larger than the ${this.maxResultBytes} bytes a task may keep`
            : undefined;
      next =
        refused !== undefined
          ? (cur) => ({ ...cur, status: 'failed', error: { code: ProtocolErrorCode.InternalError, message: refused } })
          : (cur) => ({
              ...cur,
              status: 'completed',
              result,
              inputRequests: undefined,
              answered: undefined,
              requestState: undefined,
              arguments: undefined,
            });
    }
    try {
      await this.store.update(taskId, (cur) => (cur.status === 'working' && cur.run === run ? next(cur) : undefined));
    } catch (err) {
      this.deps.logger.error('MCP task result could not be stored', { error: err instanceof Error ? err.message : String(err) });
    }
  }

  /**
   * A progress message of a running task as its statusMessage, at most one write a second
   * (ai.streamText reports every delta as progress).
   */
  statusReporter(taskId: string): (message: string) => void {
    let last = 0;
    return (message) => {
      const now = Date.now();
      if (now - last < 1000) return;
      last = now;
      const statusMessage = message.slice(0, 500);
      const write = this.store
        .update(taskId, (cur) => (cur.status === 'working' ? { ...cur, statusMessage } : undefined))
        .catch(() => undefined);
      // settle() waits for it, so the run's outcome is written after its last status. Once written it
      // is forgotten: a task that reports after its settle (or ends without one: input asked before
      // it started, a store that failed to create it) leaves nothing behind.
      this.statusWrites.set(taskId, write);
      void write.finally(() => {
        if (this.statusWrites.get(taskId) === write) this.statusWrites.delete(taskId);
      });
    };
  }

  /** statusMessage writes in flight (tests). */
  get pendingStatusWrites(): number {
    return this.statusWrites.size;
  }

  /** The caller's task, or -32602 (unknown, expired, or someone else's: the same answer). */
  async get(taskId: string, owner: string): Promise<TaskRecord> {
    const rec = await this.store.get(taskId);
    if (!rec || rec.owner !== owner) throw unknownTask(taskId);
    return rec;
  }

  /**
   * tasks/cancel: a task that is not finished becomes `cancelled` and its run is aborted, here
   * or on the instance running it (the aborted call releases its hold). A finished task stays
   * as it is (idempotent ack).
   */
  async cancel(taskId: string, owner: string): Promise<void> {
    await this.get(taskId, owner);
    const { changed } = await this.store.update(taskId, (cur) =>
      TERMINAL.has(cur.status)
        ? undefined
        : {
            ...cur,
            status: 'cancelled',
            statusMessage: 'cancelled by the client',
            inputRequests: undefined,
            answered: undefined,
            requestState: undefined,
            arguments: undefined,
          },
    );
    if (!changed) return;
    const here = this.local.get(taskId);
    if (here) here.abort.abort();
    else await this.deps.signals.publish(CANCEL_TOPIC, taskId);
  }

  /**
   * tasks/update: answers for a task in `input_required`. Answers for keys the task did not ask
   * for are ignored; once every pending request is answered, the tool runs again here with all
   * of them (and its sealed requestState), on whichever instance got the last answer.
   */
  async update(
    taskId: string,
    owner: string,
    responses: Record<string, unknown>,
    runTool: (rec: TaskRecord) => RunTool,
    runningKey = owner,
  ): Promise<void> {
    await this.get(taskId, owner);
    const { rec, changed } = await this.store.update(taskId, (cur) => {
      if (cur.status !== 'input_required' || !cur.inputRequests) return undefined;
      const pending = { ...cur.inputRequests };
      const answered = { ...cur.answered };
      let any = false;
      for (const [key, value] of Object.entries(responses)) {
        if (!Object.hasOwn(pending, key)) continue;
        answered[key] = value;
        delete pending[key];
        any = true;
      }
      if (!any) return undefined;
      if (Object.keys(pending).length > 0) return { ...cur, inputRequests: pending, answered };
      // `arguments` stay until this run settles: it may ask for input again.
      return { ...cur, status: 'working', inputRequests: undefined, answered, run: cur.run + 1 };
    });
    if (!changed || !rec || rec.status !== 'working') return;
    const abort = new AbortController();
    this.local.set(taskId, { abort, caller: runningKey });
    this.track(
      runTool(rec)(abort.signal, { inputResponses: rec.answered, sealedState: rec.requestState, taskId })
        .catch((err: unknown): ToolOutcome => this.crashed(err))
        .then((outcome) => this.settle(taskId, rec.run, outcome, abort.signal, rec.arguments ?? {})),
    );
  }

  /** Graceful stop: no new task starts; wait up to `timeoutMs` for the running ones to finish. */
  async drain(timeoutMs: number): Promise<void> {
    this.closed = true;
    await this.inFlight.settled(timeoutMs);
  }

  /**
   * Stop: runs still going here are aborted and their tasks fail. We wait (up to 5 s) for the
   * aborted runs to end, so their holds are released before storage closes.
   */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.poller);
    this.unsubscribe();
    const running = [...this.local.keys()];
    for (const { abort } of this.local.values()) abort.abort();
    this.local.clear();
    await this.inFlight.settled(5000);
    await Promise.all(
      running.map((taskId) =>
        this.store
          .update(taskId, (cur) =>
            cur.status === 'working'
              ? {
                  ...cur,
                  status: 'failed',
                  error: { code: ProtocolErrorCode.InternalError, message: 'the server instance running the task stopped' },
                  arguments: undefined,
                }
              : undefined,
          )
          .catch(() => undefined),
      ),
    );
  }
}

/** The UTF-8 size of `value` as JSON; undefined when it has none (JSON.stringify throws on a BigInt or a cycle). */
function jsonBytes(value: unknown): number | undefined {
  try {
    return Buffer.byteLength(JSON.stringify(value));
  } catch {
    return undefined;
  }
}
