import type { Identity } from '../../kernel/identity.js';
import { requestIdV7 } from '../../lib/requestIdV7.js';
import type { Metering } from '../metering/Metering.js';
import { keyToolRefusal } from '../apiKeys/keyRules.js';
import { keyAllowsTool } from './gatewayAccess.js';
import type { CallToolResult } from './mcpWire.js';
import type { CallOptions, UpstreamConnection } from './UpstreamConnection.js';
import type { ServerEntry } from './UpstreamContent.js';
import { unknownTool, upstreamToolOn } from './upstreamTools.js';

/** A caller's call of an upstream tool, as every entry point gives it. */
export interface GatewayCall extends CallOptions {
  identity: Identity | null;
  ip?: string;
}

/** What a call needs of the gateway: the billing entry priced tools are held and settled through, and the call statistics. */
export interface CallDeps {
  metering: Metering;
  /** A call finished: statistics and metrics per configured server name. */
  onCall?: ((server: string, outcome: 'ok' | 'tool_error' | 'error', seconds: number) => void) | undefined;
}

/**
 * Call `name` on `conn`, the connection serving the caller on `server`, once it is open: the tool
 * its list names now (one it lists no more is an unknown tool), held before the call when priced
 * and settled after a successful one (a failed call, or a tool error, costs nothing), counted for
 * the server's statistics either way.
 */
export async function callOnConnection(
  deps: CallDeps,
  conn: UpstreamConnection,
  call: GatewayCall,
  server: ServerEntry,
  name: string,
  args: Record<string, unknown>,
): Promise<CallToolResult> {
  const connecting = performance.now();
  try {
    await conn.ready();
  } catch (err) {
    // The upstream could not be reached (down, backing off, a connect that timed out): a failed call of that server for
    // statistics and metrics, as a call it failed is.
    deps.onCall?.(server.name, 'error', (performance.now() - connecting) / 1000);
    throw err;
  }
  // An upstream that lists the tool no more (or never did) is not asked; its name there is the one it listed last.
  const found = upstreamToolOn(server, conn, name);
  if (!found) throw unknownTool(name);
  if (!keyAllowsTool(call.identity, found.exposed)) throw unknownTool(name, keyToolRefusal(found.exposed));
  const tool = found.tool;
  // Own entries only: an upstream tool named like an Object property (toString, constructor) is priced like any other.
  const { tools: prices, tokensPerCall } = server.config.pricing;
  const price = Object.hasOwn(prices, tool) ? prices[tool]! : tokensPerCall;
  const started = performance.now();
  const hold =
    price > 0
      ? await deps.metering.hold({
          identity: call.identity,
          ...(call.ip ? { ip: call.ip } : {}),
          // In time order, as an AI call's (lib/requestIdV7.ts): its hold and finished rows sort by when the call was made.
          requestId: requestIdV7(),
          provider: `mcp:${server.name}`,
          estimatedTokens: price,
          byokAllowed: false,
          serverPays: true,
        })
      : undefined;
  let result: CallToolResult;
  try {
    result = await conn.callTool(tool, args, call);
  } catch (err) {
    await hold?.release('mcp tool call failed');
    deps.onCall?.(server.name, 'error', (performance.now() - started) / 1000);
    throw err;
  }
  if (result.isError) await hold?.release('mcp tool answered an error');
  else await hold?.settle({ tokensUsed: price, provider: `mcp:${server.name}`, model: tool, metadata: { type: 'mcp_tool', name } });
  deps.onCall?.(server.name, result.isError ? 'tool_error' : 'ok', (performance.now() - started) / 1000);
  return result;
}
