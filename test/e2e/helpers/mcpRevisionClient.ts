import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** The MCP revisions the gateway suites run their checks for, each with the SDK client that speaks it. */
export type Revision = '2025-11-25' | '2026-07-28';

/**
 * A real MCP SDK client connected to `url`'s /mcp: the 1.x SDK's for 2025-11-25, the 2.x one pinned
 * to 2026-07-28, named `<name>-2025` or `<name>-2026`. Its close goes to `closers`, for the suite's
 * afterAll.
 */
export async function mcpRevisionClient(url: string, revision: Revision, name: string, closers: Array<() => Promise<unknown>>) {
  const endpoint = new URL(`${url}/mcp`);
  if (revision === '2025-11-25') {
    const client = new LegacyClient({ name: `${name}-2025`, version: '1' });
    await client.connect(new LegacyTransport(endpoint));
    closers.push(() => client.close());
    return client;
  }
  const client = new ModernClient({ name: `${name}-2026`, version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new ModernTransport(endpoint));
  closers.push(() => client.close());
  return client;
}
