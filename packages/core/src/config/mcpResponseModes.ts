/**
 * How MCP POST requests are answered, resolved once from `mcp.responseMode` and `mcp.sessionMode`
 * (the `mcp.responseModes` key of ResolvedConfig): 'sse' streams (progress, logs and
 * server-to-client requests can travel on them) or single 'json' bodies.
 */
export interface McpResponseModes {
  /** 2025 requests: `mcp.responseMode`, else 'sse' in stateful mode and 'json' in stateless mode. */
  legacy: 'sse' | 'json';
  /**
   * 2026-07-28 requests: `mcp.responseMode`, else the SDK's 'auto' (one JSON body unless the call emits progress or logs first, then SSE).
   */
  modern: 'sse' | 'json' | 'auto';
}

export function mcpResponseModes(responseMode: 'sse' | 'json' | undefined, sessionMode: 'stateful' | 'stateless'): McpResponseModes {
  return { legacy: responseMode ?? (sessionMode === 'stateless' ? 'json' : 'sse'), modern: responseMode ?? 'auto' };
}
