/**
 * McpTasks on a real runtime and storage (two McpTasks over one store stand for two instances):
 * the state changes that must not race. Runs are plain functions here (what registerTools gives
 * McpTasks is a run of the tool through core's invoke seam; the e2e tests cover that end).
 */
import { createRuntime, MemoryStorage, resolveConfig, type Runtime } from '@ai-backend/core/internal';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpTasks, type RunTool, type ToolOutcome } from './McpTasks.js';

const text = (t: string): ToolOutcome => ({ kind: 'result', result: { content: [{ type: 'text', text: t }] } });

/** A run that waits until released (or aborted), then answers. */
function gate(answer: ToolOutcome = text('done')) {
  let release: () => void = () => undefined;
  let aborted = false;
  const released = new Promise<void>((r) => (release = r));
  const run: RunTool = (signal) =>
    new Promise((resolve) => {
      signal.addEventListener('abort', () => ((aborted = true), resolve({ kind: 'failed', error: { code: -32800, message: 'aborted' } })), {
        once: true,
      });
      void released.then(() => resolve(answer));
    });
  return { run, release: () => release(), aborted: () => aborted };
}

const until = async (check: () => Promise<boolean>, ms = 3000) => {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10)); // the poll's pace, on purpose (it waits for nothing)
  }
};

describe('McpTasks', () => {
  let runtime: Runtime;
  let a: McpTasks;
  let b: McpTasks;
  beforeAll(async () => {
    runtime = await createRuntime(resolveConfig({ storage: { type: 'memory' }, monitoring: { logging: { level: 'error' } } }), {
      storage: new MemoryStorage(),
    });
    a = new McpTasks(runtime, { cancelPollMs: 20 });
    b = new McpTasks(runtime, { cancelPollMs: 20 });
  });
  afterAll(async () => {
    await a.close();
    await b.close();
    await runtime.close();
  });

  const start = (tasks: McpTasks, run: RunTool, owner = 'sub:u1', meta = {}) =>
    tasks.start({ owner, runningKey: owner, tool: 't', arguments: { x: 1 }, meta, run }) as Promise<{ taskId: string; status: string }>;

  it('a run that ends after the task was cancelled does not overwrite "cancelled"', async () => {
    const g = gate();
    const { taskId } = await start(a, g.run);
    await b.cancel(taskId, 'sub:u1'); // from the other "instance": signals (local here) abort the run
    await until(async () => g.aborted());
    g.release();
    // The run's end is settled (its outcome offered to the store) before the status is read.
    // biome-ignore lint/complexity/useLiteralKeys: the runs McpTasks tracks for drain() and close(), reached on purpose by this test
    await a['inFlight'].settled();
    expect((await a.get(taskId, 'sub:u1')).status).toBe('cancelled');
  });

  it('a cancel after the run completed changes nothing (idempotent), and the result stays', async () => {
    const g = gate(text('the answer'));
    const { taskId } = await start(a, g.run);
    g.release();
    await until(async () => (await a.get(taskId, 'sub:u1')).status === 'completed');
    await b.cancel(taskId, 'sub:u1');
    const rec = await b.get(taskId, 'sub:u1');
    expect(rec.status).toBe('completed');
    expect(rec.result).toEqual({ content: [{ type: 'text', text: 'the answer' }] });
  });

  it('a result that is not JSON (a BigInt) fails the task, saying why, instead of leaving it working', async () => {
    const g = gate({ kind: 'result', result: { content: [], structuredContent: { n: 1n } } });
    const { taskId } = await start(a, g.run);
    g.release();
    await until(async () => (await a.get(taskId, 'sub:u1')).status !== 'working');
    const rec = await a.get(taskId, 'sub:u1');
    expect(rec.status).toBe('failed');
    expect(rec.error?.message).toMatch(/not JSON/);
  });

  it('another owner gets -32602 for get, cancel and update, and the task is untouched', async () => {
    const g = gate();
    const { taskId } = await start(a, g.run);
    for (const attempt of [
      () => b.get(taskId, 'sub:u2'),
      () => b.cancel(taskId, 'sub:u2'),
      () => b.update(taskId, 'sub:u2', {}, () => g.run),
    ]) {
      await expect(attempt()).rejects.toMatchObject({ code: -32602 });
    }
    expect((await a.get(taskId, 'sub:u1')).status).toBe('working');
    g.release();
  });

  it('input: unknown keys are ignored, a partial answer keeps the task waiting, the last answer resumes it exactly once', async () => {
    let calls = 0;
    const asked: ToolOutcome = {
      kind: 'result',
      result: {
        resultType: 'input_required',
        inputRequests: { p: { method: 'elicitation/create' }, q: { method: 'elicitation/create' } },
      } as never,
    };
    const run: RunTool = async (_signal, round) => {
      calls++;
      return round.inputResponses && Object.keys(round.inputResponses).length === 2
        ? text(`got ${JSON.stringify(round.inputResponses)}`)
        : asked;
    };
    const { taskId } = await start(a, run);
    await until(async () => (await a.get(taskId, 'sub:u1')).status === 'input_required');
    await b.update(taskId, 'sub:u1', { nope: 1 }, () => run);
    await b.update(taskId, 'sub:u1', { p: 'P' }, () => run);
    const waiting = await a.get(taskId, 'sub:u1');
    expect(waiting.status).toBe('input_required');
    expect(Object.keys(waiting.inputRequests ?? {})).toEqual(['q']);
    // Both instances get the last answer at once: one of them resumes the tool.
    await Promise.all([a.update(taskId, 'sub:u1', { q: 'Q' }, () => run), b.update(taskId, 'sub:u1', { q: 'Q' }, () => run)]);
    await until(async () => (await a.get(taskId, 'sub:u1')).status === 'completed');
    expect(calls).toBe(2);
    const done = await a.get(taskId, 'sub:u1');
    expect(done.result).toEqual({ content: [{ type: 'text', text: 'got {"p":"P","q":"Q"}' }] });
    expect(done).not.toHaveProperty('arguments', expect.anything());
  });

  it('inputBeforeTask: a first round asking for input is answered synchronously, no task stored', async () => {
    const asked = { resultType: 'input_required', inputRequests: { n: { method: 'elicitation/create' } } };
    const before = (await runtime.shared.keys('mcp:task:')).length;
    const answer = await a.start({
      owner: 'sub:u1',
      runningKey: 'sub:u1',
      tool: 't',
      arguments: {},
      meta: { inputBeforeTask: true },
      run: async () => ({ kind: 'result', result: asked as never }),
    });
    expect(answer).toEqual(asked);
    expect((await runtime.shared.keys('mcp:task:')).length).toBe(before);
  });

  it('a per-caller limit on running tasks', async () => {
    const small = new McpTasks(runtime, { maxRunningPerCaller: 1 });
    const g = gate();
    await start(small, g.run, 'sub:limited');
    await expect(start(small, g.run, 'sub:limited')).rejects.toMatchObject({ code: -32600 });
    await start(small, gate().run, 'sub:someone-else');
    g.release();
    await small.close();
  });

  it('a status reported after the task ended leaves no write behind', async () => {
    const g = gate();
    const { taskId } = await start(a, g.run);
    const report = a.statusReporter(taskId);
    g.release();
    await until(async () => (await a.store.get(taskId))?.status === 'completed');
    report('a progress message that came late');
    await until(async () => a.pendingStatusWrites === 0);
    expect(a.pendingStatusWrites).toBe(0);
  });
});
