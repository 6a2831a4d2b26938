import { CoreError } from '../../kernel/CoreError.js';

/**
 * The caller's context as the pipeline built it. Registries only hand it to the readers and
 * renderers registered with them (the procedure adapters in routers/adapters), so it is opaque
 * here and services stay below the pipeline.
 */
export type CallContext = unknown;

/** One argument of a prompt. MCP prompt arguments are strings. */
export interface PromptArgumentDefinition {
  name: string;
  description?: string;
  required?: boolean;
  /** The allowed values (an enum); offered by completion/complete and enforced by render. */
  values?: readonly string[];
  /** Suggested values offered by completion/complete without restricting the argument. */
  suggestions?: readonly string[];
}

/** A content block of a prompt message (MCP: text, image, audio, resource, resource_link). */
export type PromptContent =
  | { type: 'text'; text: string }
  | { type: 'image' | 'audio'; data: string; mimeType: string }
  | { type: 'resource'; resource: { uri: string; mimeType?: string; text: string } | { uri: string; mimeType?: string; blob: string } }
  | { type: 'resource_link'; uri: string; name: string; mimeType?: string; description?: string };

export interface PromptMessage {
  role: 'user' | 'assistant';
  content: PromptContent;
}

export interface PromptResult {
  description?: string;
  messages: PromptMessage[];
}

/**
 * A prompt the server publishes (MCP prompts/list, prompts/get). Procedures with
 * `meta.mcp.prompt` are registered automatically; operators add their own with
 * `runtime.prompts.register(...)`.
 */
export interface PromptDefinition {
  name: string;
  title?: string;
  description?: string;
  arguments?: PromptArgumentDefinition[];
  /**
   * Only an authenticated caller may get it (a protected procedure's prompt): the MCP transport
   * answers an anonymous prompts/get with the 401 challenge that starts sign-in.
   */
  requiresIdentity?: boolean;
  /** The procedure that renders it (set for `meta.mcp.prompt`): its access rules apply. */
  procedure?: string;
  /** Build the messages. `ctx` is the caller's context (identity, abort signal). */
  get(args: Record<string, string>, ctx: CallContext): Promise<PromptResult> | PromptResult;
  /** Suggest values for an argument beyond its enum (optional). */
  complete?(argument: string, value: string, context: Record<string, string>): Promise<string[]> | string[];
}

/** At most this many completion values go back (the MCP limit). */
const MAX_COMPLETIONS = 100;

export interface CompletionResult {
  values: string[];
  total: number;
  hasMore: boolean;
}

/** Rank values for a partial input: prefix matches first, then substring matches. */
export function completeFrom(values: readonly string[], partial: string): CompletionResult {
  const p = partial.toLowerCase();
  const prefix = values.filter((v) => v.toLowerCase().startsWith(p));
  const inner = p ? values.filter((v) => !v.toLowerCase().startsWith(p) && v.toLowerCase().includes(p)) : [];
  const all = [...prefix, ...inner];
  return { values: all.slice(0, MAX_COMPLETIONS), total: all.length, hasMore: all.length > MAX_COMPLETIONS };
}

export class PromptRegistry {
  private readonly prompts = new Map<string, PromptDefinition>();
  private readonly listeners = new Set<() => void>();

  /**
   * Add or replace a prompt; connected MCP clients get notifications/prompts/list_changed. A name
   * with `__` is refused: upstream MCP servers' prompts are `<server>__<prompt>` on /mcp
   * (docs/mcp-gateway.md), and one of ours named so would be listed beside the upstream's and
   * answer its prompts/get (ours are looked up first).
   */
  register(prompt: PromptDefinition): void {
    if (prompt.name.includes('__'))
      throw new Error(
        `MCP prompt name "${prompt.name.slice(0, 200)}" contains "__", which names upstream MCP servers' prompts (<server>__<prompt>)`,
      );
    this.prompts.set(prompt.name, prompt);
    this.changed();
  }

  unregister(name: string): boolean {
    const removed = this.prompts.delete(name);
    if (removed) this.changed();
    return removed;
  }

  list(): PromptDefinition[] {
    return [...this.prompts.values()];
  }

  get(name: string): PromptDefinition | undefined {
    return this.prompts.get(name);
  }

  /** Run a prompt after checking required arguments (missing ones are INVALID_PARAMS). */
  async render(name: string, args: Record<string, string>, ctx: CallContext): Promise<PromptResult> {
    const prompt = this.prompts.get(name);
    if (!prompt) throw new CoreError('NOT_FOUND', `unknown prompt: ${name.slice(0, 200)}`);
    const missing = (prompt.arguments ?? []).filter((a) => a.required && (args[a.name] === undefined || args[a.name] === ''));
    if (missing.length > 0) {
      throw new CoreError(
        'INVALID_PARAMS',
        `missing required argument${missing.length > 1 ? 's' : ''}: ${missing.map((a) => a.name).join(', ')}`,
      );
    }
    for (const a of prompt.arguments ?? []) {
      const v = args[a.name];
      if (v !== undefined && a.values && !a.values.includes(v)) {
        throw new CoreError('INVALID_PARAMS', `argument ${a.name} must be one of: ${a.values.join(', ')}`);
      }
    }
    return prompt.get(args, ctx);
  }

  /** completion/complete for a prompt argument: its enum values, or the prompt's own completer. */
  async complete(name: string, argument: string, value: string, context: Record<string, string> = {}): Promise<CompletionResult> {
    const prompt = this.prompts.get(name);
    if (!prompt) throw new CoreError('NOT_FOUND', `unknown prompt: ${name.slice(0, 200)}`);
    const def = prompt.arguments?.find((a) => a.name === argument);
    const source = def?.values ?? def?.suggestions;
    if (source) return completeFrom(source, value);
    if (prompt.complete) return completeFrom(await prompt.complete(argument, value, context), value);
    return { values: [], total: 0, hasMore: false };
  }

  /** Called when prompts are added or removed (MCP notifications/prompts/list_changed). */
  onListChanged(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(): void {
    for (const l of this.listeners) l();
  }
}
