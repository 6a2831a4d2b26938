// @every-node: CI runs this file on every Node version it tests (docs/testing.md, "CI: phases and times").
/**
 * The MCP Tasks extension (io.modelcontextprotocol/tasks) for `ai.generateText`, with the v2 SDK
 * client (2026-07-28) against two instances sharing Redis (no sticky routing) and the test
 * upstream:
 * - a task cancelled half-way: the upstream request is aborted, the hold released, nothing
 *   charged (reserve + release, never a settle), the ledger consistent; cancelled on instance B
 *   while it runs on instance A;
 * - a task that completes: the result is read from the other instance, charged exactly once
 *   (reserve + settle, no release), no hold left;
 * - a task is another caller's business only for its owner (-32602 for anyone else).
 * The same two instances on PostgreSQL storage without Redis (no pub/sub: the running instance
 * notices the cancel by re-reading the task) prove the storage path.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dropTestKeys,
  dropTestSchema,
  testPostgres,
  testPostgresOptions,
  testRedis,
  testRedisOptions,
} from '@ai-backend/test-utils/services';
import { publicProcedure, router } from '@ai-backend/core';
import { runtimeOf, type Runtime } from '@ai-backend/core/internal';
import { createServer } from '@ai-backend/transports';
import {
  createTestUpstream,
  creditTokens,
  gatewayConfig,
  rpcCall,
  startAiServer,
  tokenFor,
  waitFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';

const TASKS = 'io.modelcontextprotocol/tasks';
const redis = await testRedis();
const pgAt = await testPostgres();

const Loose = z.looseObject({});

/** Which instance ran each round of `approveJob` (its runtime). */
const ranOn: Runtime[] = [];
/** A long-running tool that asks for approval inside its task (input_required), with sealed state. */
const tasksRouter = router({
  approveJob: publicProcedure
    .meta({ description: 'Asks for approval, then runs the job', longRunning: true, mcp: { result: 'content' } })
    .input(z.object({ job: z.string() }))
    .mutation(async ({ ctx, input }) => {
      ranOn.push(runtimeOf(ctx));
      const answer = ctx.mcp?.inputResponses?.approve as { action?: string; content?: { ok?: boolean } } | undefined;
      if (answer?.action !== 'accept') {
        return {
          resultType: 'input_required',
          inputRequests: {
            approve: {
              method: 'elicitation/create',
              params: {
                mode: 'form',
                message: `Run ${input.job}?`,
                requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
              },
            },
          },
          requestState: await ctx.mcp!.sealState!({ job: input.job }),
        };
      }
      const state = ctx.mcp?.requestState as { job?: string } | undefined;
      return {
        content: [{ type: 'text', text: `ran ${state?.job} (approved: ${answer.content?.ok}, task ${ctx.mcp?.taskId ? 'yes' : 'no'})` }],
      };
    }),
});
type Task = {
  taskId: string;
  status: string;
  resultType?: string;
  ttlMs?: number;
  result?: { content: Array<{ text: string }>; isError?: boolean };
  error?: unknown;
};

/**
 * A 2026-07-28 client that speaks Tasks; `target()` picks the instance each HTTP request goes to.
 * The v2 SDK client (2.4.0) has no Tasks support yet: its 2026 codec refuses a tools/call answer
 * with resultType "task" (UnsupportedResultType), so the CreateTaskResult is read off the
 * client's own transport (its fetch) when that happens; tasks/get and tasks/cancel go through
 * the client with result schemas.
 */
async function tasksClient(target: () => string, token: string): Promise<TasksClient> {
  const client = new Client(
    { name: 'e2e-tasks', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { extensions: { [TASKS]: {} } } },
  );
  const answers = new Map<unknown, Task>();
  const routed: typeof fetch = async (input, init) => {
    const res = await fetch(String(input instanceof Request ? input.url : input).replace(/^http:\/\/[^/]+/, target()), init);
    const sent = typeof init?.body === 'string' ? (JSON.parse(init.body) as { id?: unknown; method?: string }) : undefined;
    if (sent?.method === 'tools/call' && res.headers.get('content-type')?.includes('application/json')) {
      const body = (await res.clone().json()) as { result?: Task };
      if (body.result?.resultType === 'task') answers.set(sent.id, body.result);
    }
    return res;
  };
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${target()}/mcp`), {
      fetch: routed,
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return Object.assign(client, { taskAnswers: answers });
}
type TasksClient = Client & { taskAnswers: Map<unknown, Task> };

async function call(c: TasksClient, name: string, args: Record<string, unknown>): Promise<Task> {
  const before = new Set(c.taskAnswers.keys());
  try {
    return (await c.request({ method: 'tools/call', params: { name, arguments: args } }, Loose)) as Task;
  } catch (err) {
    const created = [...c.taskAnswers].find(([id]) => !before.has(id));
    if ((err as { code?: unknown }).code === 'UNSUPPORTED_RESULT_TYPE' && created) return created[1];
    throw err;
  }
}
const get = (c: Client, taskId: string) => c.request({ method: 'tasks/get', params: { taskId } }, Loose) as Promise<Task>;
/** tasks/cancel; the ack is empty apart from the server's `_meta` (serverInfo). */
async function cancel(c: Client, taskId: string): Promise<Record<string, unknown>> {
  const { _meta, ...ack } = (await c.request({ method: 'tasks/cancel', params: { taskId } }, Loose)) as Record<string, unknown>;
  return ack;
}

async function settled(c: Client, taskId: string): Promise<Task> {
  let last: Task | undefined;
  await waitFor(async () => ['completed', 'failed', 'cancelled'].includes((last = await get(c, taskId)).status), {
    timeoutMs: 10_000,
    what: `task ${taskId} finished`,
  });
  return last!;
}

function describeCluster(name: string, storage: () => Record<string, unknown> | undefined, cleanup: () => Promise<void>) {
  describe.skipIf(!storage())(name, () => {
    let upstream: TestUpstream;
    let a: AiServer;
    let b: AiServer;
    let admin: string;
    beforeAll(async () => {
      upstream = await createTestUpstream();
      a = await startAiServer(upstream, { storage: storage() as never, customRouters: { tasks: tasksRouter } });
      b = await startAiServer(upstream, { storage: storage() as never, customRouters: { tasks: tasksRouter } });
      admin = await tokenFor('tasks-admin', { admin: true });
    });
    afterAll(async () => {
      await a?.stop();
      await b?.stop();
      await upstream?.close();
      await cleanup();
    });

    const holds = async () => (await a.runtime.storage.keys('hold:')).length;
    const kinds = async (sub: string) => (await a.runtime.billing.ledger.entries(sub)).map((e) => e.kind).filter((k) => k !== 'credit');
    const balance = async (token: string) => (await rpcCall(a.url, token, 'billing.getTokenBalance')).result.virtualTokenBalance as number;

    it('a generateText task cancelled half-way on the other instance: upstream aborted, hold released, nothing charged', async () => {
      const sub = `tasks-cancel-${name.length}`;
      await creditTokens(a.url, admin, sub, 10_000, `${sub}-credit`);
      const token = await tokenFor(sub);
      const onA = await tasksClient(() => a.url, token);
      const onB = await tasksClient(() => b.url, token);
      const before = upstream.requests.length;

      const created = await call(onA, 'generateText', {
        content: 'please [[upstream:hang]]',
        systemPrompt: 's',
        provider: 'openai',
        options: { maxTokens: 50 },
      });
      expect(created).toMatchObject({ resultType: 'task', status: 'working' });
      expect(created.ttlMs).toBeGreaterThan(0);
      // Half-way: the upstream request is out and the caller's tokens are held.
      await waitFor(async () => upstream.requests.length > before && (await holds()) === 1, {
        timeoutMs: 5000,
        what: 'the upstream call started',
      });
      expect((await get(onB, created.taskId)).status).toBe('working');

      expect(await cancel(onB, created.taskId)).toEqual({});
      await waitFor(() => upstream.requests.at(-1)!.aborted, { timeoutMs: 5000, what: 'the upstream request aborted' });
      await waitFor(async () => (await holds()) === 0, { timeoutMs: 5000, what: 'the hold released' });
      expect((await get(onA, created.taskId)).status).toBe('cancelled');
      // Released, never settled: the whole credit is still there and the ledger adds up.
      expect(await balance(token)).toBe(10_000);
      expect(await kinds(sub)).toEqual(['reserve', 'release']);
      expect((await a.runtime.billing.ledger.audit(sub)).consistent).toBe(true);
      // A second cancel of the finished task is an idempotent ack and changes nothing.
      expect(await cancel(onA, created.taskId)).toEqual({});
      expect(await kinds(sub)).toEqual(['reserve', 'release']);
      await onA.close();
      await onB.close();
    });

    it('a generateText task that completes: result read on the other instance, charged exactly once', async () => {
      const sub = `tasks-done-${name.length}`;
      await creditTokens(a.url, admin, sub, 10_000, `${sub}-credit`);
      const token = await tokenFor(sub);
      const onA = await tasksClient(() => a.url, token);
      const onB = await tasksClient(() => b.url, token);

      const created = await call(onA, 'generateText', {
        content: 'hello [[upstream:latency=300]]',
        systemPrompt: 's',
        provider: 'openai',
        options: { maxTokens: 50 },
      });
      expect(created).toMatchObject({ resultType: 'task', status: 'working' });
      // What the task keeps in storage: never the arguments (they can carry a BYOK apiKey).
      const stored = (await a.runtime.shared.get(`mcp:task:${created.taskId}`)) as Record<string, unknown>;
      expect(stored).toMatchObject({ taskId: created.taskId, tool: 'generateText', status: 'working' });
      expect(JSON.parse(JSON.stringify(stored))).not.toHaveProperty('arguments');
      const done = await settled(onB, created.taskId);
      expect(done.status).toBe('completed');
      expect(done.result?.isError, done.result?.content[0]?.text).toBeFalsy();
      const body = JSON.parse(done.result!.content[0]!.text) as { success: boolean; data: { text: string } };
      expect(body.success).toBe(true);
      expect(body.data.text.length).toBeGreaterThan(0);

      expect(await holds()).toBe(0);
      expect(await kinds(sub)).toEqual(['reserve', 'settle']);
      const left = await balance(token);
      expect(left).toBeLessThan(10_000);
      // Cancelling a finished task changes nothing: no release after the settle.
      expect(await cancel(onB, created.taskId)).toEqual({});
      expect((await get(onA, created.taskId)).status).toBe('completed');
      expect(await kinds(sub)).toEqual(['reserve', 'settle']);
      expect(await balance(token)).toBe(left);
      expect((await a.runtime.billing.ledger.audit(sub)).consistent).toBe(true);
      await onA.close();
      await onB.close();
    });

    it('a streamText task completes with the usage in its result, charged exactly once', async () => {
      const sub = `tasks-stream-${name.length}`;
      await creditTokens(a.url, admin, sub, 10_000, `${sub}-credit`);
      const token = await tokenFor(sub);
      const onA = await tasksClient(() => a.url, token);
      const created = await call(onA, 'streamText', {
        content: 'stream please [[upstream:latency=200]]',
        systemPrompt: 's',
        provider: 'openai',
        options: { maxTokens: 50 },
      });
      // Its progress becomes the statusMessage (how far, never text fragments).
      expect(created).toMatchObject({ resultType: 'task', status: 'working' });
      const done = (await settled(onA, created.taskId)) as Task & { statusMessage?: string };
      expect(done.status).toBe('completed');
      expect(done.result?.isError, done.result?.content[0]?.text).toBeFalsy();
      expect(done.statusMessage).toMatch(/^\d+ characters generated$/);
      expect(await holds()).toBe(0);
      expect(await kinds(sub)).toEqual(['reserve', 'settle']);
      expect((await a.runtime.billing.ledger.audit(sub)).consistent).toBe(true);
      await onA.close();
    });

    it('a task waiting for input on instance A is answered on B and resumes there with its sealed state', async () => {
      const token = await tokenFor(`tasks-input-${name.length}`);
      const onA = await tasksClient(() => a.url, token);
      const onB = await tasksClient(() => b.url, token);
      ranOn.length = 0;
      const created = await call(onA, 'approveJob', { job: 'nightly' });
      expect(created).toMatchObject({ resultType: 'task' });
      let parked: Task & { inputRequests?: Record<string, { method: string }> } = created;
      await waitFor(async () => (parked = await get(onB, created.taskId)).status === 'input_required', {
        timeoutMs: 5000,
        what: 'the task asks for input',
      });
      expect(parked.inputRequests?.approve?.method).toBe('elicitation/create');
      expect(parked).not.toHaveProperty('requestState');
      const { _meta, ...ack } = (await onB.request(
        {
          method: 'tasks/update',
          params: { taskId: created.taskId, inputResponses: { approve: { action: 'accept', content: { ok: true } } } },
        },
        Loose,
      )) as Record<string, unknown>;
      expect(ack).toEqual({});
      const done = await settled(onA, created.taskId);
      expect(done.status).toBe('completed');
      expect(done.result?.content[0]?.text).toBe('ran nightly (approved: true, task yes)');
      expect(ranOn).toEqual([a.runtime, b.runtime]);
      await onA.close();
      await onB.close();
    });

    it('another caller cannot read or cancel a task: -32602, as for an unknown id', async () => {
      const owner = `tasks-owner-${name.length}`;
      await creditTokens(a.url, admin, owner, 10_000, `${owner}-credit`);
      const mine = await tasksClient(() => a.url, await tokenFor(owner));
      const theirs = await tasksClient(() => b.url, await tokenFor(`tasks-other-${name.length}`));
      const created = await call(mine, 'generateText', {
        content: 'hi [[upstream:latency=400]]',
        systemPrompt: 's',
        provider: 'openai',
        options: { maxTokens: 20 },
      });
      await expect(get(theirs, created.taskId)).rejects.toMatchObject({ code: -32602 });
      await expect(cancel(theirs, created.taskId)).rejects.toMatchObject({ code: -32602 });
      const done = await settled(mine, created.taskId);
      expect(done.status).toBe('completed');
      expect(done.result?.isError, done.result?.content[0]?.text).toBeFalsy();
      await mine.close();
      await theirs.close();
    });
  });
}

const redisOpts = redis.ok ? testRedisOptions(redis, 'mcptasks') : undefined;
describeCluster(
  'MCP Tasks: two instances sharing Redis',
  () => (redisOpts ? { type: 'redis', redis: { host: redisOpts.host, port: redisOpts.port, keyPrefix: redisOpts.keyPrefix } } : undefined),
  async () => {
    if (redisOpts) await dropTestKeys(redis, redisOpts.keyPrefix);
  },
);

const pgOpts = pgAt.ok ? testPostgresOptions(pgAt, 'mcptasks') : undefined;
describeCluster(
  'MCP Tasks: two instances sharing PostgreSQL, no Redis',
  () => (pgOpts ? { type: 'postgres', postgres: pgOpts } : undefined),
  async () => {
    if (pgOpts) await dropTestSchema(pgAt, pgOpts.schema);
  },
);

describe.skipIf(!redis.ok)('MCP Tasks: an instance that stops while a task runs', () => {
  const opts = redis.ok ? testRedisOptions(redis, 'mcptasksstop') : undefined;
  let upstream: TestUpstream;
  afterAll(async () => {
    await upstream?.close();
    if (opts) await dropTestKeys(redis, opts.keyPrefix);
  });

  it('the task fails ("stopped"), its upstream call is aborted and its hold released, readable on the other instance', async () => {
    upstream = await createTestUpstream();
    const storage = { type: 'redis' as const, redis: { host: opts!.host, port: opts!.port, keyPrefix: opts!.keyPrefix } };
    // A short grace period: graceful stop waits that long for running tasks, then aborts them.
    const stopping = createServer(gatewayConfig(upstream, { storage }), { shutdownTimeoutMs: 300 });
    const { url } = await stopping.start();
    const other = await startAiServer(upstream, { storage });
    try {
      const admin = await tokenFor('tasks-stop-admin', { admin: true });
      await creditTokens(other.url, admin, 'tasks-stop', 10_000, 'tasks-stop-credit');
      const token = await tokenFor('tasks-stop');
      const onStopping = await tasksClient(() => url, token);
      const onOther = await tasksClient(() => other.url, token);
      const created = await call(onStopping, 'generateText', {
        content: 'please [[upstream:hang]]',
        systemPrompt: 's',
        provider: 'openai',
        options: { maxTokens: 50 },
      });
      await waitFor(async () => (await other.runtime.storage.keys('hold:')).length === 1, {
        timeoutMs: 5000,
        what: 'the upstream call started',
      });
      await onStopping.close();
      await stopping.stop();

      const after = (await get(onOther, created.taskId)) as Task & { error?: { code: number; message: string } };
      expect(after.status).toBe('failed');
      expect(after.error).toMatchObject({ code: -32603, message: 'the server instance running the task stopped' });
      expect(upstream.requests.at(-1)!.aborted).toBe(true);
      expect(await other.runtime.storage.keys('hold:')).toEqual([]);
      const kinds = (await other.runtime.billing.ledger.entries('tasks-stop')).map((e) => e.kind).filter((k) => k !== 'credit');
      expect(kinds).toEqual(['reserve', 'release']);
      expect((await other.runtime.billing.ledger.audit('tasks-stop')).consistent).toBe(true);
      await onOther.close();
    } finally {
      await stopping.stop();
      await other.stop();
    }
  });
});
