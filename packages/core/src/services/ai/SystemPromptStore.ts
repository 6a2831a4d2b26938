import { CoreError } from '../../errors/CoreError.js';

const NAME = /^[A-Za-z0-9_.-]{1,100}$/;
const REFERENCE = /^@([A-Za-z0-9_.-]{1,100})$/;

/** A resolved system prompt. `name` is set when it came from the server's store. */
export interface ResolvedSystemPrompt {
  text: string;
  name?: string;
}

/**
 * Server-side system prompts that requests reference by name (`systemPrompt: "@support"`), so
 * the client never holds the text. Filled from config `ai.systemPrompts` and from code
 * (`runtime.ai.systemPrompts.register(...)`). The texts never leave the server: no listing returns
 * them and errors only ever name the reference.
 */
export class SystemPromptStore {
  private readonly prompts = new Map<string, string>();

  constructor(fromConfig: Record<string, string> = {}) {
    for (const [name, text] of Object.entries(fromConfig)) this.register(name, text);
  }

  /** Add or replace a named prompt (custom code, e.g. loaded from a file or a database). */
  register(name: string, text: string): void {
    if (!NAME.test(name)) throw new TypeError(`system prompt names use 1-100 letters, digits, "_", "." or "-": ${JSON.stringify(name.slice(0, 100))}`);
    if (text.length === 0) throw new TypeError(`system prompt "${name}" is empty`);
    this.prompts.set(name, text);
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
   * `@name` is a reference and must exist; anything else is inline text, refused when
   * `allowInline` is false.
   */
  resolve(systemPrompt: string, allowInline: boolean): ResolvedSystemPrompt {
    const ref = REFERENCE.exec(systemPrompt);
    if (ref) {
      const name = ref[1]!;
      const text = this.prompts.get(name);
      if (text === undefined) {
        throw new CoreError('NOT_FOUND', `unknown system prompt "@${name}"`, { details: { reason: 'unknown_system_prompt', name } });
      }
      return { text, name };
    }
    if (!allowInline) {
      throw new CoreError('FORBIDDEN', 'this server only accepts named system prompts: send systemPrompt as "@<name>"', {
        details: { reason: 'inline_system_prompt_disabled' },
      });
    }
    return { text: systemPrompt };
  }
}
