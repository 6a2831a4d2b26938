import { fileURLToPath } from 'node:url';
import { runtimeOfServices, type Runtime } from '@ai-backend/core/internal';
import { waitForUpstreams } from './mcpUpstreams.js';
import { startTestServer, type TestServer } from './testServer.js';

/** An upstream MCP server run over stdio from a script in this folder. */
export interface ScriptUpstream {
  /** The script's file name in test/e2e/helpers (e.g. `oddToolNames.mjs`). */
  script: string;
  /** Its command-line arguments. */
  args?: string[];
  /** Variables for its environment (the gateway adds them to the SDK's default ones). */
  env?: Record<string, string>;
  /** How long the gateway waits for one of its answers (default 10 s). */
  timeoutMs?: number;
}

export interface ScriptUpstreamGateway extends TestServer {
  runtime: Runtime;
}

/**
 * A server (no auth on /mcp) whose gateway has the `upstreams` named as the keys, each a script of
 * this folder over stdio, once every one of them is ready: the tests that use it are about what
 * the gateway makes of an upstream, not about who may call it.
 */
export async function startScriptUpstreamGateway(upstreams: Record<string, ScriptUpstream>): Promise<ScriptUpstreamGateway> {
  const mcpServers = Object.fromEntries(
    Object.entries(upstreams).map(([name, { script, args = [], env, timeoutMs = 10_000 }]) => [
      name,
      {
        command: process.execPath,
        args: [fileURLToPath(new URL(`./${script}`, import.meta.url)), ...args],
        ...(env ? { env } : {}),
        timeoutMs,
      },
    ]),
  );
  const server = await startTestServer({ mcp: { auth: { authType: 'none' } }, mcpServers });
  try {
    const runtime = runtimeOfServices(await server.server.ready());
    // Within the 30 s the suites give their beforeAll, so a slow upstream is named as such.
    await waitForUpstreams(runtime, { timeoutMs: 20_000 });
    return { ...server, runtime };
  } catch (err) {
    await server.stop();
    throw err;
  }
}
