// Auth overhead (issue 4): each transport scenario with a valid HS256 JWT on every request, as a
// ratio to the same scenario without a token, on the same server in the same run. The server
// runs authType 'jwt' with the tools public, so both variants succeed; the difference is the
// bearer verification (and identity in the context) alone. Runs alternate A B B A, each half the
// duration, so drift during the run cancels out. Besides req/s, the server's own CPU time per
// request (from /proc) is reported: on a shared machine throughput follows the neighbours' load,
// CPU per request much less.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { mintDevToken } from '@ai-backend/auth';
import { load, startServer } from './lib.mjs';

const SECRET = 'bench-jwt-secret-0123456789-abcdefghijkl';
const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };

export async function mcpSession(url, auth) {
  const init = await fetch(url + '/mcp', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...MCP_HEADERS, ...auth },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
    }),
  });
  const sessionId = init.headers.get('mcp-session-id');
  await init.text();
  if (!sessionId) throw new Error(`MCP initialize failed: ${init.status}`);
  const ack = await fetch(url + '/mcp', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...MCP_HEADERS, 'mcp-session-id': sessionId, ...auth },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  await ack.text();
  return sessionId;
}

const mean = (a, b, key) => (a[key] + b[key]) / 2;

/** CPU seconds (user + system) the process has used so far. */
export async function cpuSeconds(pid) {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

/** The transport scenarios with a credential variant; `sessions[variant]` is an MCP session opened with it. */
export function authScenarios(url, sessions) {
  return [
    {
      name: 'POST /rpc system.test',
      req: () => ({
        url: url + '/rpc',
        method: 'POST',
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'system.test', params: { message: 'test' } }),
      }),
    },
    {
      name: 'GET /trpc/mcp.echo',
      req: () => ({ url: url + '/trpc/mcp.echo?input=' + encodeURIComponent(JSON.stringify({ json: { message: 'hi' } })) }),
    },
    {
      name: 'MCP tools/call greeting',
      req: (variant) => ({
        url: url + '/mcp',
        method: 'POST',
        headers: { ...MCP_HEADERS, 'mcp-session-id': sessions[variant] },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'greeting', arguments: { name: 'bench' } } }),
      }),
    },
  ];
}

/** One timed run of a scenario with a variant's headers (1 s warm-up), with the server's CPU µs per request. */
export function abbaRun(app, seconds, headersOf) {
  return async (s, variant) => {
    const r = s.req(variant);
    const opts = { ...r, headers: { ...r.headers, ...headersOf(variant) } };
    await load({ ...opts, duration: 1, warmup: 0 });
    const cpu0 = await cpuSeconds(app.pid);
    const result = await load({ ...opts, duration: seconds, warmup: 0 });
    return { ...result, cpuUs: (((await cpuSeconds(app.pid)) - cpu0) * 1e6) / Math.max(1, result.total) };
  };
}

export async function authOverhead(duration) {
  const here = (p) => fileURLToPath(new URL(p, import.meta.url));
  const config = {
    storage: { type: 'memory' },
    jwt: { secret: SECRET },
    // Both tools benchmarked are public: the MCP tool rules govern /trpc and /rpc too (docs/security.md).
    mcp: { auth: { authType: 'jwt', publicTools: ['greeting', 'echo'] } },
  };
  const app = await startServer(here('./servers/ai-backend.mjs'), [JSON.stringify(config)]);
  const token = await mintDevToken({ secret: SECRET, sub: 'bench-user', scopes: ['mcp'] });
  const bearer = { authorization: `Bearer ${token}` };
  const sessions = { none: await mcpSession(app.url, {}), jwt: await mcpSession(app.url, bearer) };

  const scenarios = authScenarios(app.url, sessions);

  const half = Math.max(1, duration / 2);
  const run = abbaRun(app, half, (variant) => (variant === 'jwt' ? bearer : {}));
  const lines = [
    `\n## Auth overhead: valid HS256 JWT on every request vs no token (same server, A B B A, ${half}s per run)\n`,
    '| scenario | no auth req/s | JWT req/s | JWT / no auth | server CPU µs/req no auth | JWT | CPU JWT / no auth | p99 ms no auth / JWT | errors |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  try {
    for (const s of scenarios) {
      const a1 = await run(s, 'none');
      const b1 = await run(s, 'jwt');
      const b2 = await run(s, 'jwt');
      const a2 = await run(s, 'none');
      const none = mean(a1, a2, 'rps');
      const jwt = mean(b1, b2, 'rps');
      const errors = a1.errors + a2.errors + b1.errors + b2.errors;
      const cpuNone = mean(a1, a2, 'cpuUs');
      const cpuJwt = mean(b1, b2, 'cpuUs');
      lines.push(
        `| ${s.name} | ${Math.round(none)} | ${Math.round(jwt)} | ${(jwt / none).toFixed(2)} | ${Math.round(cpuNone)} | ${Math.round(cpuJwt)} | ${(cpuJwt / cpuNone).toFixed(2)} | ${mean(a1, a2, 'p99')} / ${mean(b1, b2, 'p99')} | ${errors} |`,
      );
    }
  } finally {
    await app.stop();
  }
  lines.push(
    '\nThe same token is sent on every request, as clients do: after the first verification it is served from the verified-token cache (hash-keyed, bounded by exp).',
  );
  return lines.join('\n');
}
