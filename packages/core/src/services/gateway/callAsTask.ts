import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/client';
import { loadClientModule, type OpenedUpstream } from './openUpstream.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { CallToolResult } from './mcpWire.js';

/** A result schema that accepts what the SDK client already checked as JSON-RPC (a Standard Schema, as `request` takes). */
const anyObject = {
  '~standard': {
    version: 1,
    vendor: 'ai-backend',
    validate: (value: unknown) =>
      typeof value === 'object' && value !== null ? { value } : { issues: [{ message: 'the result is not an object' }] },
  },
} as const;

type Task = { taskId?: unknown; status?: unknown; pollInterval?: unknown; statusMessage?: unknown };
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const RELATED_TASK = 'io.modelcontextprotocol/related-task';

/**
 * Call an upstream tool that requires task-augmented execution (`execution.taskSupport:
 * "required"`, MCP 2025-11-25 tasks; server-everything's `simulate-research-query` is one) and
 * wait for its result: `tools/call` with `task`, `tasks/get` at the upstream's poll interval
 * (0.1 to 5 s) until the task ends or asks for input, then `tasks/result`. The gateway's clients
 * see a plain tool (its listing drops `execution`), so a call is the same for every revision; it
 * is bounded by the server's `timeoutMs` as a whole, and a timed-out or cancelled one cancels the
 * task at the upstream (`tasks/cancel`). With `onProgress`, the upstream is asked for progress
 * under a token of the gateway's own, heard for the task's whole life (watchProgress), and each
 * notification is passed on to the caller (under the caller's own token).
 */
export async function callAsTask(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  opts: {
    timeoutMs: number;
    signal?: AbortSignal;
    onProgress?: (progress: number, total: number | undefined, message: string | undefined) => void;
    watchProgress?: OpenedUpstream['watchProgress'];
  },
): Promise<CallToolResult> {
  const token = opts.onProgress && opts.watchProgress ? `ai-backend-task-${randomUUID()}` : undefined;
  const unwatch = token ? opts.watchProgress!(token, (p) => opts.onProgress!(p.progress, p.total, p.message)) : undefined;
  try {
    return await runTask(client, name, args, opts, token);
  } finally {
    unwatch?.();
  }
}

async function runTask(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  opts: { timeoutMs: number; signal?: AbortSignal },
  progressToken: string | undefined,
): Promise<CallToolResult> {
  const deadline = Date.now() + opts.timeoutMs;
  const left = () => Math.max(1, deadline - Date.now());
  const options = () => ({ timeout: left(), ...(opts.signal ? { signal: opts.signal } : {}) });
  const created = (await client.request(
    {
      method: 'tools/call',
      params: { name, arguments: args, task: { ttl: opts.timeoutMs }, ...(progressToken ? { _meta: { progressToken } } : {}) },
    },
    anyObject,
    options(),
  )) as { task?: Task } & Partial<CallToolResult>;
  // An upstream that answered at once (it ran the tool without a task) gave its result.
  if (!created.task) return toolResult(created);
  const taskId = created.task.taskId;
  if (typeof taskId !== 'string') throw new CoreError('UPSTREAM_ERROR', 'the upstream created a task without a taskId');
  let task: Task = created.task;
  try {
    while (!TERMINAL.has(String(task.status)) && task.status !== 'input_required') {
      const interval = typeof task.pollInterval === 'number' ? Math.min(Math.max(task.pollInterval, 100), 5000) : 500;
      await sleep(Math.min(interval, left()), opts.signal);
      if (Date.now() >= deadline)
        throw Object.assign(new Error(`the task did not end within ${opts.timeoutMs} ms`), { code: 'REQUEST_TIMEOUT' });
      task = (await client.request({ method: 'tasks/get', params: { taskId } }, anyObject, options())) as Task;
    }
    // tasks/result gives the tool's result (or its error) once the task has ended; for input_required it waits, per the specification.
    const result = await client.request({ method: 'tasks/result', params: { taskId } }, anyObject, options());
    return withoutTaskMeta(await toolResult(result));
  } catch (err) {
    // Given up here (timeout, cancel, a lost connection): the upstream need not work on for nobody.
    if (!TERMINAL.has(String(task.status)))
      void client.request({ method: 'tasks/cancel', params: { taskId } }, anyObject, { timeout: 2000 }).catch(() => undefined);
    throw err;
  }
}

/**
 * `value` as a tool result, checked as the SDK client checks a plain call's: these answers come
 * through `request` with no schema of their own, and one that is no tool result (`content` not an
 * array of content blocks) reached the caller as our answer, which its client refused as a
 * protocol error instead of a tool error naming the server.
 */
async function toolResult(value: unknown): Promise<CallToolResult> {
  const { isCallToolResult } = await loadClientModule();
  if (!isCallToolResult(value))
    throw new Error('Invalid result for tools/call: not a tool result (content must be an array of content blocks)');
  return value as CallToolResult;
}

/** The upstream's task is the gateway's own business: its id is not passed on as if the client had a task. */
function withoutTaskMeta(result: CallToolResult): CallToolResult {
  const meta = result._meta as Record<string, unknown> | undefined;
  if (!meta || !(RELATED_TASK in meta)) return result;
  const { [RELATED_TASK]: _task, ...rest } = meta;
  const { _meta: _old, ...body } = result;
  return (Object.keys(rest).length > 0 ? { ...body, _meta: rest } : body) as CallToolResult;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const aborted = () => Object.assign(new Error('This operation was aborted'), { name: 'AbortError' });
    if (signal?.aborted) return reject(aborted());
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', abort);
    };
    const abort = () => {
      done();
      reject(aborted());
    };
    const timer = setTimeout(() => {
      done();
      resolve();
    }, ms);
    signal?.addEventListener('abort', abort, { once: true });
  });
}
