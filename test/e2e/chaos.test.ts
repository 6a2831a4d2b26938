/**
 * Chaos (issue 20): three server instances (separate processes) on PostgreSQL + Redis under mixed
 * metered load — ai.generateText over /rpc, /v1/chat/completions plain and streamed, and
 * generateText as an MCP tool — while one instance is killed -9, Redis is restarted and
 * PostgreSQL is restarted. Both are private servers this test starts itself (a temp dir, a free
 * port), never the machine's shared ones.
 *
 * Afterwards: every acknowledged call is charged exactly once (one settle per requestId, the
 * amount the client was told); every reservation is closed by exactly one settle or release; the
 * balance equals the ledger for every account; no hold outlives its TTL; no call is free. A hold
 * is not durable: PostgreSQL's restart may lose the last ones, whole, and their calls' settles
 * then charge in full (`note.holdLost`, no reserve in the ledger).
 * During the faults every call to a live instance answers within 1 s (a clear 503 where the store
 * is down).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { estimateTokens, type ConfigInput, runtimeOfServices } from '@ai-backend/core/internal';
import { createServer } from '@ai-backend/transports';
import { startPrivatePostgres, startPrivateRedis, testService } from '@ai-backend/test-utils/services';
import { createTestUpstream, creditTokens, gatewayConfig, mcpClient, tokenFor, waitFor, type TestUpstream } from './helpers/aiGateway.js';

const redisServer = await testService('redis-server');
// Through the shared detection: under AI_BACKEND_REQUIRE_SERVICES=1 a missing binary fails the run.
const pgServer = await testService('postgres-server');
const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const SERVER_SCRIPT = fileURLToPath(new URL('./helpers/chaosServer.ts', import.meta.url));

const USERS = ['chaos-u0', 'chaos-u1', 'chaos-u2', 'chaos-u3'];
const CREDIT = 50_000_000;
const TTL_MS = 3_000;
const LOAD_MS = 16_000;
const WORKERS = 8;
const SYSTEM = 's';
const CONTENT = 'chaos';
const MAX_TOKENS = 10;
/** Every entry point answers within this while a fault lasts. */
const ANSWER_MS = 1_000;
const countInputTokens = (system: string, text: string) => estimateTokens(text, system, 0);

type Entry = 'rpc' | 'v1' | 'v1-stream' | 'mcp';
interface CallRecord {
  entry: Entry;
  instance: number;
  user: string;
  startedAt: number;
  ms: number;
  /** Acknowledged: the client received a complete answer. */
  ok: boolean;
  requestId?: string;
  charged?: number;
  /** What the client got otherwise (status / code / message). */
  error?: string;
  /** 503 / UNAVAILABLE: the clear answer while a store is down. */
  unavailable?: boolean;
}

interface Instance {
  proc: ChildProcess;
  url: string;
  killedAt?: number;
}

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

async function startInstance(config: ConfigInput): Promise<Instance> {
  const proc = spawn(process.execPath, ['--conditions=ai-backend-source', '--import', tsxLoader, SERVER_SCRIPT, JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  cleanups.push(async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGKILL');
      await new Promise((r) => proc.once('exit', r));
    }
  });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
    if (process.env.CHAOS_DEBUG) process.stderr.write(`[instance ${proc.pid}] ${d.toString()}`);
  });
  if (process.env.CHAOS_DEBUG) proc.once('exit', (code, sig) => process.stderr.write(`[instance ${proc.pid}] exited ${code} ${sig}\n`));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.startsWith('{"url"'));
      if (line) resolve((JSON.parse(line) as { url: string }).url);
    });
    proc.once('exit', (code) => reject(new Error(`instance exited ${code}: ${stderr}`)));
  });
  return { proc, url };
}

/** One metered call through `entry`; never throws. */
async function meteredCall(entry: Entry, inst: Instance, index: number, user: string, token: string): Promise<CallRecord> {
  const startedAt = Date.now();
  const rec: CallRecord = { entry, instance: index, user, startedAt, ms: 0, ok: false };
  const signal = AbortSignal.timeout(10_000);
  const auth = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
  try {
    if (entry === 'rpc') {
      const res = await fetch(`${inst.url}/rpc`, {
        method: 'POST',
        headers: auth,
        signal,
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'ai.generateText',
          params: { content: CONTENT, systemPrompt: SYSTEM, provider: 'openai', options: { maxTokens: MAX_TOKENS } },
        }),
      });
      const body = (await res.json()) as {
        result?: { data: { requestId: string }; tokenUsage: { tokensCharged: number } };
        error?: { code: number; message: string; data?: { appCode?: string } };
      };
      if (body.result)
        Object.assign(rec, { ok: true, requestId: body.result.data.requestId, charged: body.result.tokenUsage.tokensCharged });
      else
        Object.assign(rec, {
          error: `${res.status} ${body.error?.data?.appCode} ${body.error?.message}`,
          unavailable: body.error?.data?.appCode === 'UNAVAILABLE',
        });
    } else if (entry === 'v1' || entry === 'v1-stream') {
      const stream = entry === 'v1-stream';
      const res = await fetch(`${inst.url}/v1/chat/completions`, {
        method: 'POST',
        headers: auth,
        signal,
        body: JSON.stringify({
          model: 'openai/gpt-4.1-mini',
          max_tokens: MAX_TOKENS,
          stream,
          messages: [
            { role: 'system', content: SYSTEM },
            { role: 'user', content: CONTENT },
          ],
        }),
      });
      const text = await res.text();
      if (res.status !== 200) {
        Object.assign(rec, { error: `${res.status} ${text.slice(0, 200)}`, unavailable: res.status === 503 });
      } else if (!stream) {
        const body = JSON.parse(text) as { id: string; ai_backend?: { token_usage?: { tokensCharged: number } } };
        // On the pass-through path the body is the provider's own: our request id and charge are headers.
        const charged = res.headers.get('x-ai-backend-tokens-charged');
        Object.assign(rec, {
          ok: true,
          requestId: res.headers.get('x-ai-backend-request-id') ?? body.id.replace(/^chatcmpl-/, ''),
          charged: body.ai_backend?.token_usage?.tokensCharged ?? (charged === null ? undefined : Number(charged)),
        });
      } else {
        // Acknowledged only when the stream ended properly; an error event or a cut stream is not.
        const frames = text
          .split('\n')
          .filter((l) => l.startsWith('data: '))
          .map((l) => l.slice(6));
        const done = frames.at(-1) === '[DONE]' && !frames.some((f) => f.includes('"error"'));
        const first = frames.find((f) => f.startsWith('{'));
        const id =
          res.headers.get('x-ai-backend-request-id') ??
          (first ? (JSON.parse(first) as { id: string }).id.replace(/^chatcmpl-/, '') : undefined);
        if (done && id) Object.assign(rec, { ok: true, requestId: id });
        else
          Object.assign(rec, {
            error: `stream not completed: ${text.slice(-200)}`,
            unavailable: text.includes('UNAVAILABLE') || text.includes('unavailable'),
          });
      }
    } else {
      const client = await mcpClient(inst.url, token);
      try {
        const r = (await client.callTool(
          {
            name: 'generateText',
            arguments: { content: CONTENT, systemPrompt: SYSTEM, provider: 'openai', options: { maxTokens: MAX_TOKENS } },
          },
          undefined,
          { signal },
        )) as {
          isError?: boolean;
          content: Array<{ text: string }>;
        };
        const text = r.content[0]!.text;
        if (r.isError) Object.assign(rec, { error: text.slice(0, 200), unavailable: /UNAVAILABLE|unavailable/.test(text) });
        else {
          const out = JSON.parse(text) as { data: { requestId: string }; tokenUsage: { tokensCharged: number } };
          Object.assign(rec, { ok: true, requestId: out.data.requestId, charged: out.tokenUsage.tokensCharged });
        }
      } finally {
        await client.close().catch(() => undefined);
      }
    }
  } catch (err) {
    rec.error = `${(err as Error).name}: ${(err as Error).message} ${String((err as { cause?: unknown }).cause ?? '')}`.slice(0, 300);
    // An MCP handshake refused while the store is down arrives as a thrown 503.
    rec.unavailable = /\b503\b|UNAVAILABLE|unavailable/.test(rec.error);
  }
  rec.ms = Date.now() - startedAt;
  return rec;
}

interface LedgerRecord {
  kind: string;
  requestId?: string;
  usage?: { tokensCharged: number };
  note?: { holdLost?: boolean };
}

describe.skipIf(!redisServer.ok || !pgServer.ok)('chaos: three instances on PostgreSQL + Redis', () => {
  it('kill -9 of an instance, Redis and PostgreSQL restarts under mixed metered load: money exact, answers within 1 s', {
    timeout: 240_000,
  }, async () => {
    const [pg, redis] = await Promise.all([startPrivatePostgres(), startPrivateRedis()]);
    cleanups.push(
      () => pg.close(),
      () => redis.close(),
    );
    const upstream: TestUpstream = await createTestUpstream({ latencyMs: 10, outputTokens: MAX_TOKENS, countInputTokens });
    cleanups.push(() => upstream.close());

    const config = gatewayConfig(upstream, {
      monitoring: { logging: { level: 'error' } },
      storage: {
        type: 'postgres',
        postgres: { host: pg.host, port: pg.port, user: 'postgres', database: 'postgres', schema: 'chaos', poolSize: 10 },
        shared: 'redis',
        redis: { host: redis.host, port: redis.port, keyPrefix: 'chaos:' },
      },
      billing: { reservationTtlMs: TTL_MS },
      mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: true, maxRequests: 1_000_000, maxToolCalls: 1_000_000 } },
    });
    // The first instance applies the migrations; the other two start beside it.
    const first = await startInstance(config);
    const instances = [first, ...(await Promise.all([startInstance(config), startInstance(config)]))];

    const admin = await tokenFor('chaos-admin', { admin: true });
    const tokens = new Map<string, string>();
    for (const u of USERS) {
      tokens.set(u, await tokenFor(u));
      await creditTokens(first.url, admin, u, CREDIT, `chaos-credit-${u}`);
    }

    // Warm up: each instance serves every entry point once (the first call loads the AI SDK and
    // the providers, seconds on a busy machine), so the load measures the faults, not cold starts.
    for (const [i, inst] of instances.entries()) {
      for (const entry of ['rpc', 'v1', 'v1-stream', 'mcp'] as const) {
        await waitFor(async () => (await meteredCall(entry, inst, i, USERS[0]!, tokens.get(USERS[0]!)!)).ok, {
          timeoutMs: 60_000,
          intervalMs: 200,
          what: `warm-up ${entry} on instance ${i}`,
        });
      }
    }

    const records: CallRecord[] = [];
    const faults: Array<{ what: string; from: number; to: number }> = [];
    const loadStart = Date.now();
    const stopAt = loadStart + LOAD_MS;
    const entries: Entry[] = ['rpc', 'v1', 'v1-stream', 'mcp'];
    const workers = Array.from({ length: WORKERS }, async (_, w) => {
      for (let n = 0; Date.now() < stopAt; n++) {
        const live = instances.map((inst, i) => ({ inst, i })).filter(({ inst }) => inst.killedAt === undefined);
        const { inst, i } = live[(w + n) % live.length]!;
        const user = USERS[(w + n) % USERS.length]!;
        records.push(await meteredCall(entries[(w + n * 3) % entries.length]!, inst, i, user, tokens.get(user)!));
      }
    });

    const at = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, loadStart + ms - Date.now())));
    const schedule = (async () => {
      await at(3_000);
      const victim = instances[2]!;
      victim.killedAt = Date.now();
      victim.proc.kill('SIGKILL');
      faults.push({ what: 'kill -9 instance 2', from: victim.killedAt, to: victim.killedAt });
      await at(5_000);
      let from = Date.now();
      await redis.stop();
      await at(6_500);
      await redis.start();
      faults.push({ what: 'redis restart', from, to: Date.now() });
      await at(8_500);
      from = Date.now();
      await pg.stop();
      await at(10_500);
      await pg.start();
      faults.push({ what: 'postgres restart', from, to: Date.now() });
    })();
    await Promise.all([...workers, schedule]);

    // --- During the faults: every call to a live instance answered within 1 s, with a clear error when not served.
    const victimKilledAt = instances[2]!.killedAt!;
    const toLive = records.filter((r) => r.instance !== 2 || r.startedAt + r.ms < victimKilledAt);
    // Measured in the fault windows (from each fault until 1 s after it ended).
    const inFault = (r: CallRecord) => faults.some((f) => r.startedAt >= f.from - 100 && r.startedAt <= f.to + 1_000);
    // A fault may add at most ANSWER_MS to what the same entry point takes without one (its p95
    // outside the fault windows), so the check holds on a loaded CI machine too: on an idle one
    // the calls take a few ms, and the bound is the 1 s.
    const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.95)] ?? 0;
    const baseline = new Map(entries.map((e) => [e, p95(toLive.filter((r) => r.entry === e && !inFault(r)).map((r) => r.ms))]));
    const slow = toLive.filter((r) => inFault(r) && r.ms > ANSWER_MS + baseline.get(r.entry)!);
    if (process.env.CHAOS_DEBUG) {
      const pct = (xs: number[], q: number) => xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))];
      for (const e of entries) {
        const out = toLive.filter((r) => r.entry === e && !inFault(r)).map((r) => r.ms);
        const inn = toLive.filter((r) => r.entry === e && inFault(r)).map((r) => r.ms);
        process.stderr.write(
          `[latency] ${e}: outside n=${out.length} p50=${pct(out, 0.5)} p95=${pct(out, 0.95)} max=${pct(out, 1)}; in faults n=${inn.length} p50=${pct(inn, 0.5)} p95=${pct(inn, 0.95)} max=${pct(inn, 1)}\n`,
        );
      }
    }
    expect(
      slow.map(
        (r) =>
          `${r.entry}@${r.instance} at +${r.startedAt - loadStart}ms took ${r.ms}ms (baseline p95 ${baseline.get(r.entry)}ms) ${r.error ?? 'ok'}`,
      ),
      JSON.stringify(faults.map((f) => ({ ...f, from: f.from - loadStart, to: f.to - loadStart }))),
    ).toEqual([]);
    const unclear = toLive.filter((r) => !r.ok && !r.unavailable);
    expect(unclear.map((r) => `${r.entry}@${r.instance}: ${r.error}`)).toEqual([]);
    const acknowledged = records.filter((r) => r.ok);
    expect(acknowledged.length).toBeGreaterThan(20);
    // Calls were served before, between and after the faults (the system recovered by itself).
    expect(acknowledged.some((r) => r.startedAt > faults.at(-1)!.to + 500)).toBe(true);
    expect(records.filter((r) => r.unavailable).length).toBeGreaterThan(0);

    // --- Afterwards, read through a fourth runtime on the same stores.
    const verifier = createServer(config);
    cleanups.push(() => verifier.stop());
    const runtime = runtimeOfServices(await verifier.ready());
    const storage = runtime.storage;

    // Settles queued during the PostgreSQL outage land, and holds of the killed instance and of
    // calls cut by the faults are released by the live instances' sweeps within 1.5x the TTL.
    await waitFor(async () => (await storage.dueKeys('hold:', Number.MAX_SAFE_INTEGER, 1)).length === 0, {
      timeoutMs: 4 * TTL_MS + 10_000,
      intervalMs: 200,
      what: 'every hold closed',
    });

    const ackById = new Map(acknowledged.map((r) => [r.requestId!, r]));
    for (const user of USERS) {
      const audit = await runtime.billing.ledger.audit(user);
      expect(audit.consistent, `balance == ledger for ${user}`).toBe(true);
      const ledger = (await storage.readLog<LedgerRecord>(`ledger:${encodeURIComponent(user)}`)).map((e) => e.record);
      const closes = new Map<string, LedgerRecord[]>();
      const reserves = new Set<string>();
      for (const e of ledger) {
        if (e.kind === 'reserve') reserves.add(e.requestId!);
        if (e.kind === 'settle' || e.kind === 'release') closes.set(e.requestId!, [...(closes.get(e.requestId!) ?? []), e]);
      }
      // Every reservation closed: one settle or one release; a release at expiry may be followed by
      // the settle of an answered call that the store could not take in time (a late settle).
      for (const id of reserves) {
        const kinds = (closes.get(id) ?? []).map((e) => e.kind).join(',');
        expect(['settle', 'release', 'release,settle'], `closes of ${id}`).toContain(kinds);
      }
      // Every acknowledged call of this user: settled (never released: no free call), for what the client was told.
      for (const r of acknowledged.filter((a) => a.user === user)) {
        const close = (closes.get(r.requestId!) ?? []).find((e) => e.kind === 'settle');
        expect(close?.kind, `acknowledged ${r.entry} call ${r.requestId} settled`).toBe('settle');
        expect(close!.usage!.tokensCharged).toBeGreaterThan(0);
        if (r.charged !== undefined) expect(close!.usage!.tokensCharged).toBe(r.charged);
      }
      const charged = ledger.filter((e) => e.kind === 'settle').reduce((s, e) => s + e.usage!.tokensCharged, 0);
      const b = await runtime.billing.balances(user);
      expect(b.subscription + b.one_time).toBe(CREDIT - charged);
    }
    // No call the upstream served went unaccounted: each upstream request belongs to a closed
    // reservation, or to a settle whose hold PostgreSQL's restart lost.
    const ledgers = (await Promise.all(USERS.map((u) => storage.readLog<LedgerRecord>(`ledger:${encodeURIComponent(u)}`))))
      .flat()
      .map((e) => e.record);
    const accounted = ledgers.filter((e) => e.kind === 'reserve' || (e.kind === 'settle' && e.note?.holdLost === true)).length;
    expect(upstream.requests.length).toBeLessThanOrEqual(accounted);
    expect([...ackById.keys()].length).toBe(acknowledged.length); // request ids are unique
  });
});
