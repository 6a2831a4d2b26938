import { CoreError } from '../../kernel/CoreError.js';

const NAME = /^[A-Za-z0-9_.-]{1,100}$/;
const REFERENCE = /^@([A-Za-z0-9_.-]{1,100})$/;

/** A resolved system prompt. `name` is set when it came from the server's store. */
export interface ResolvedSystemPrompt {
  text: string;
  name?: string;
  /** A named prompt the operator allowed on calls paid with the caller's own key. */
  allowWithCallerKeys?: boolean;
}

/** A prompt's options besides its text. */
export interface SystemPromptOptions {
  /**
   * Also use it when the caller pays with its own key (input apiKey or a stored BYOK key). The text
   * then reaches that caller's provider account, where its owner can read it. Default false: a
   * named prompt is used only on calls the platform pays for.
   */
  allowWithCallerKeys?: boolean;
}

/** Whether a request may send its own system prompt text (`ai.allowInlineSystemPrompts`), or only `@name` references. */
export type InlinePrompts = 'allowed' | 'refused';

/**
 * Server-side system prompts that requests reference by name (`systemPrompt: "@support"`), so
 * the client never holds the text. Filled from config `ai.systemPrompts` and from code
 * (`runtime.ai.systemPrompts.register(...)`). The texts never leave the server: no listing returns
 * them and errors only ever name the reference.
 */
export class SystemPromptStore {
  private readonly prompts = new Map<string, { text: string; allowWithCallerKeys: boolean }>();

  constructor(
    fromConfig: Record<string, string | ({ text: string } & SystemPromptOptions)> = {},
    private readonly inline: InlinePrompts = 'allowed',
  ) {
    for (const [name, entry] of Object.entries(fromConfig)) {
      if (typeof entry === 'string') this.register(name, entry);
      else this.register(name, entry.text, entry);
    }
  }

  /** Add or replace a named prompt (custom code, e.g. loaded from a file or a database). */
  register(name: string, text: string, opts: SystemPromptOptions = {}): void {
    if (!NAME.test(name))
      throw new TypeError(`system prompt names use 1-100 letters, digits, "_", "." or "-": ${JSON.stringify(name.slice(0, 100))}`);
    if (text.length === 0) throw new TypeError(`system prompt "${name}" is empty`);
    this.prompts.set(name, { text, allowWithCallerKeys: opts.allowWithCallerKeys === true });
  }

  unregister(name: string): boolean {
    return this.prompts.delete(name);
  }

  has(name: string): boolean {
    return this.prompts.has(name);
  }

  /** Names only, never texts. */
  names(): string[] {
    return [...this.prompts.keys()].sort();
  }

  /**
   * Turn a request's `systemPrompt` into the text sent upstream. A value that is exactly
   * `@name` is a reference and must exist; anything else is inline text, refused when the store
   * was made with inline prompts refused.
   */
  resolve(systemPrompt: string): ResolvedSystemPrompt {
    const ref = REFERENCE.exec(systemPrompt);
    if (ref) {
      const name = ref[1]!;
      const entry = this.prompts.get(name);
      if (entry === undefined) {
        throw new CoreError('NOT_FOUND', `unknown system prompt "@${name}"`, { details: { reason: 'unknown_system_prompt', name } });
      }
      return { text: entry.text, name, allowWithCallerKeys: entry.allowWithCallerKeys };
    }
    if (this.inline === 'refused') {
      throw new CoreError('FORBIDDEN', 'this server only accepts named system prompts: send systemPrompt as "@<name>"', {
        details: { reason: 'inline_system_prompt_disabled' },
      });
    }
    return { text: systemPrompt };
  }
}

/**
 * A named prompt may reach an upstream only on a call the platform pays for, or when its entry
 * allows caller keys: otherwise the text would land in the caller's own provider account (its
 * logs, its dashboards), where the caller can read what the server keeps secret.
 */
export function assertPromptMayUse(system: ResolvedSystemPrompt, mode: 'byok' | 'platform'): void {
  if (system.name === undefined || mode === 'platform' || system.allowWithCallerKeys) return;
  throw new CoreError(
    'FORBIDDEN',
    `the server prompt "@${system.name}" is only used on calls the server pays for; send your own system prompt with your own key`,
    {
      details: { reason: 'server_prompt_needs_platform', name: system.name },
    },
  );
}
