/** MCP tool behaviour hints (MCP 2025-06-18 ToolAnnotations). */
export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/**
 * Procedure metadata. A procedure becomes an MCP tool when it has `mcp`;
 * the tool name defaults to the last path segment.
 */
export interface ProcedureMeta {
  /** One-line description, also the MCP tool description. */
  description?: string;
  mcp?: {
    /** Tool name; default: the procedure's last path segment (e.g. `greeting`). */
    name?: string;
    /** Callable over MCP without authentication even when tools/call requires it. */
    public?: boolean;
    annotations?: ToolAnnotations;
  };
}
