/** Who among API keys may call a procedure; see `ProcedureMeta.keyAccess`. */
export type KeyAccess = 'any' | 'none' | { scope: string };

/** MCP tool behaviour hints (MCP 2025-06-18 ToolAnnotations). */
export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** Publish a procedure as an MCP prompt (prompts/list, prompts/get). See docs/mcp.md. */
export interface McpPromptMeta {
  /** Prompt name; default: the tool name rule (last path segment). */
  name?: string;
  title?: string;
  /** Default: the procedure's description. */
  description?: string;
}

/**
 * Publish a query procedure as an MCP resource: `uri` for a fixed resource (no input), or
 * `uriTemplate` (RFC 6570 level 1, `{var}`) whose variables become the procedure's input.
 */
export type McpResourceMeta = {
  name?: string;
  title?: string;
  description?: string;
  mimeType?: string;
} & ({ uri: string; uriTemplate?: never } | { uriTemplate: string; uri?: never });

/**
 * A long-running procedure (see `ProcedureMeta.longRunning` and docs/mcp.md "Tasks").
 */
export interface LongRunningMeta {
  /**
   * 'optional' (default): a 2026-07-28 client that negotiated the Tasks extension gets a task,
   * any other client an ordinary (synchronous) tool call. 'required': only as a task; a client
   * without the extension gets -32021 (Missing Required Client Capability).
   */
  taskSupport?: 'optional' | 'required';
  /** How long the task (and its result) stays readable after it was created. Default 1 hour. */
  ttlMs?: number;
  /**
   * The procedure gathers input with input-required results *before* the work starts (MRTR):
   * those rounds are answered synchronously, and the task is created on the round that does
   * the work. Without it, input asked for inside a task parks the task in `input_required`.
   */
  inputBeforeTask?: true;
}

/**
 * Procedure metadata. A procedure becomes an MCP tool when it has `mcp`;
 * the tool name defaults to the last path segment.
 */
export interface ProcedureMeta {
  /** One-line description, also the MCP tool description. */
  description?: string;
  /**
   * Who may call it, set by the procedure builders (protectedProcedure: 'user', adminProcedure:
   * 'admin'); read by the MCP transport so an anonymous call to such a tool gets the 401
   * challenge that starts a client's sign-in, instead of a tool error.
   */
  access?: 'user' | 'admin';
  /**
   * May an API key call it (docs/security.md "What an API key may call")? `'any'`: every key,
   * one without scopes included; `{ scope }`: a key holding that scope; `'none'`: never a key,
   * only its owner signed in with a token. Decided by the one access policy on every entry point.
   * Every built-in procedure states it. Without it, a custom procedure is `'any'` unless it is
   * `writes` (then `'none'`): mark the ones that change a user's account or settings `'none'` or
   * give them a scope. Administrator procedures also need an administrator key (rule 1).
   */
  keyAccess?: KeyAccess;
  /**
   * The procedure writes files or changes workspaces: once authentication is configured
   * (authType other than 'none') it is never callable anonymously, on any entry point, whatever
   * `requireAuthForToolsCall`, `publicTools` or `authEnforcement` say. Set it on custom
   * procedures with the same kind of effect.
   */
  writes?: true;
  /**
   * `'byTool'`: an API key's `tools` rule names the tools this procedure reaches, not the
   * procedure itself (the gateway's procedures: the rule is over `<server>__<tool>`), so the
   * access policy leaves the rule to the procedure, which applies it to the tool its input names.
   */
  keyToolsRule?: 'byTool';
  /**
   * Calls count against `mcp.rateLimiting.maxToolCalls` like tool calls, though the procedure is
   * not an MCP tool (ai.embed: an upstream call that costs like generateText).
   */
  countsAsToolCall?: true;
  /**
   * The call can take long (an upstream model call, a job): on MCP 2026-07-28 it runs as a task
   * of the Tasks extension (io.modelcontextprotocol/tasks) for clients that negotiated it: the
   * call answers at once with a task id, and the client polls, answers input and cancels
   * through tasks/get, tasks/update and tasks/cancel. `true` is `{ taskSupport: 'optional' }`.
   * Other entry points (/trpc, /rpc, 2025 MCP sessions) call it as before.
   */
  longRunning?: true | LongRunningMeta;
  mcp?: {
    /** Tool name; default: the procedure's last path segment (e.g. `greeting`). */
    name?: string;
    /** Callable over MCP without authentication even when tools/call requires it. */
    public?: boolean;
    annotations?: ToolAnnotations;
    /** Also a tool (default true); set false for a procedure that is only a prompt or resource. */
    tool?: boolean;
    /**
     * How the tool result is formed: 'json' (default) sends the value as text, plus
     * structuredContent when the procedure declares `.output()`; 'content' means the procedure
     * returns an MCP tool result itself (`{ content: [...], isError? }`: images, audio, resources).
     */
    result?: 'json' | 'content';
    /** Also an MCP prompt; its input fields become the prompt's arguments. */
    prompt?: true | McpPromptMeta;
    /** Also an MCP resource (or resource template). */
    resource?: McpResourceMeta;
    /**
     * The procedure reads the caller's MCP roots (client workspaces). A 2025 session reports
     * them with roots/list; a 2026-07-28 client, which has no session, is asked for them with
     * an input-required roots/list before the call runs (when it declared the roots capability).
     */
    roots?: true;
  };
}
