import type { Storage } from '@ai-backend/core';

/** The extension id of MCP Tasks (SEP-2663), negotiated under `capabilities.extensions`. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

export const TERMINAL: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled']);

/** One task as stored: everything any instance needs to answer, resume or cancel it. */
export interface TaskRecord {
  taskId: string;
  /** The caller it belongs to (`sub:<subject>` or `ip:<address>` when anonymous); nobody else sees it. */
  owner: string;
  tool: string;
  /**
   * The call's arguments, kept only while the task waits for input (a resumed run needs them):
   * they can hold secrets (a BYOK apiKey), so a task that never asks for input never stores them.
   */
  arguments?: Record<string, unknown>;
  status: TaskStatus;
  createdAt: string;
  lastUpdatedAt: string;
  /** Absolute end of life (ms since epoch): createdAt + ttlMs. Every write keeps it. */
  expiresAt: number;
  ttlMs: number;
  pollIntervalMs: number;
  statusMessage?: string;
  /** The tool result once `completed` (a tool error is a completed task with isError). */
  result?: Record<string, unknown>;
  /** The JSON-RPC error once `failed` (a protocol-level failure). */
  error?: { code: number; message: string; data?: Record<string, unknown> };
  /** Input still wanted from the client while `input_required`, by the tool's keys. */
  inputRequests?: Record<string, unknown>;
  /** Answers received so far for the current round. */
  answered?: Record<string, unknown>;
  /** The sealed requestState of the tool's last input-required result (server side only: never on the wire). */
  requestState?: string;
  /** Increments on every (re)start of the tool; a run settles only its own run number. */
  run: number;
}

/**
 * Tasks in core Storage (`mcp:task:<id>`, expiring with the task's TTL), so any instance can
 * read, resume or cancel a task another one created. State changes go through transactions:
 * a run that finishes and a cancel that arrives at the same time cannot both win.
 */
export class TaskStore {
  constructor(private readonly storage: Storage) {}

  private key(taskId: string): string {
    return `mcp:task:${taskId}`;
  }

  async create(rec: TaskRecord): Promise<void> {
    const ok = await this.storage.compareAndSet(this.key(rec.taskId), undefined, rec, { ttlMs: rec.ttlMs });
    if (!ok) throw new Error('task id collision');
  }

  async get(taskId: string): Promise<TaskRecord | undefined> {
    const rec = await this.storage.get<TaskRecord>(this.key(taskId));
    return rec && rec.expiresAt > Date.now() ? rec : undefined;
  }

  /**
   * Apply `change` atomically. `change` returns the next record, or undefined to leave it as
   * it is (the transition does not apply). Returns the record after the call and whether it changed.
   */
  async update(
    taskId: string,
    change: (cur: TaskRecord) => TaskRecord | undefined,
  ): Promise<{ rec: TaskRecord | undefined; changed: boolean }> {
    const key = this.key(taskId);
    const now = Date.now();
    return this.storage.transact<{ rec: TaskRecord | undefined; changed: boolean }>([key], (read) => {
      const cur = read<TaskRecord>(key);
      if (!cur || cur.expiresAt <= now) return { writes: [], result: { rec: undefined, changed: false } };
      const next = change(cur);
      if (!next) return { writes: [], result: { rec: cur, changed: false } };
      const stamped = { ...next, lastUpdatedAt: new Date(now).toISOString() };
      return {
        writes: [{ op: 'set', key, value: stamped, ttlMs: Math.max(1, cur.expiresAt - now) }],
        result: { rec: stamped, changed: true },
      };
    });
  }
}

/** The fields every task answer carries (SEP-2663 `Task`): no requestState, no v1 `ttl`/`pollInterval`. */
function taskFields(rec: TaskRecord) {
  return {
    taskId: rec.taskId,
    status: rec.status,
    createdAt: rec.createdAt,
    lastUpdatedAt: rec.lastUpdatedAt,
    ttlMs: rec.ttlMs,
    pollIntervalMs: rec.pollIntervalMs,
    ...(rec.statusMessage ? { statusMessage: rec.statusMessage } : {}),
  };
}

/** The `tools/call` answer that creates a task: flat `Result & Task`, resultType "task". */
export function createTaskResult(rec: TaskRecord): Record<string, unknown> {
  return { resultType: 'task', ...taskFields(rec) };
}

/** `tasks/get` (DetailedTask): the result inlined once completed, the error once failed, pending input while input_required. */
export function detailedTask(rec: TaskRecord): Record<string, unknown> {
  return {
    ...taskFields(rec),
    ...(rec.status === 'completed' && rec.result ? { result: rec.result } : {}),
    ...(rec.status === 'failed' && rec.error ? { error: rec.error } : {}),
    ...(rec.status === 'input_required' && rec.inputRequests ? { inputRequests: rec.inputRequests } : {}),
  };
}
