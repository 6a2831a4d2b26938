import type { ServerRequestHandler } from './postToolCall.js';

/**
 * How a caller's tools/call runs on an upstream. Its own module, not callOnUpstream's: the
 * published types of UpstreamConnection name it, and callOnUpstream's declarations reach
 * openUpstream's, which name the optional MCP client package's types (upstreamLists.ts).
 */
export interface CallOptions {
  signal?: AbortSignal;
  onProgress?: (progress: number, total: number | undefined, message: string | undefined) => void;
  /**
   * The caller's MCP client, for what an upstream asks it during the call (sampling, elicitation):
   * absent where there is none (/rpc, /trpc), and then the upstream is told so.
   */
  onRequest?: ServerRequestHandler;
}
