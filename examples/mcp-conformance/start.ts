/**
 * Start the conformance fixture server in-process (tests) or from the command line:
 * `npx tsx examples/mcp-conformance/start.ts [port]`.
 */
import { createServer, type AiBackendServer, type BoundAddress, type ConfigInput } from 'ai-backend';
import config from './ai-backend.config.js';

export async function startConformanceServer(
  overrides: Partial<ConfigInput> = {},
): Promise<{ server: AiBackendServer; address: BoundAddress; mcpUrl: string }> {
  const server = createServer({ ...config, ...overrides });
  const address = await server.start();
  return { server, address, mcpUrl: `${address.url}/mcp` };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const port = Number(process.argv[2] ?? 8000);
  const { server, mcpUrl } = await startConformanceServer({ port });
  process.stdout.write(`MCP conformance fixtures at ${mcpUrl}\n`);
  const stop = () => void server.stop().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
