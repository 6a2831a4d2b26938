import type { Server } from '@modelcontextprotocol/server';
import { completeFrom, CoreError, keyResourceRefusal } from '@ai-backend/core/internal';
import { identityOf } from './gatewayTools.js';
import { toMcpError } from './mcpErrors.js';
import { keyMayGet, keyPromptRefusal } from './registerPrompts.js';
import { recordRefusal } from './recordRefusal.js';
import { keyMayRead } from './registerResources.js';
import type { McpServerDeps } from './sessionState.js';

const EMPTY = { completion: { values: [], total: 0, hasMore: false } };

/**
 * completion/complete: enum arguments of prompts (and a prompt's own completer), and
 * variables of resource templates that provide `complete`.
 */
export function registerCompletion(server: Server, deps: McpServerDeps): void {
  const { prompts, resources } = deps.services;
  server.setRequestHandler('completion/complete', async (request, ctx): Promise<never> => {
    const { ref, argument, context } = request.params;
    try {
      // An upstream's prompt (`<server>__<prompt>`) or resource template (the MCP gateway), asked of its server.
      const gateway = deps.services.gateway;
      const ours = ref.type === 'ref/prompt' ? prompts.get(ref.name) : (resources.getTemplate(ref.uri) ?? resources.get(ref.uri));
      if (gateway.active && !ours) {
        const upstreamRef = ref.type === 'ref/prompt' ? { type: ref.type, name: ref.name } : { type: ref.type, uri: ref.uri };
        const done = await gateway.content.complete(identityOf(ctx), upstreamRef, argument, context?.arguments ?? {}, ctx.mcpReq.signal);
        if (done) return { completion: done } as never;
        // One its API key may not use is answered as unknown below; the refusal is recorded.
        recordRefusal(deps, ctx, gateway.content.keyRefusal(identityOf(ctx), upstreamRef), refName(ref));
      }
      if (ref.type === 'ref/prompt') {
        // A prompt an API key may not get is one it cannot complete either: as unknown as in prompts/get.
        const prompt = prompts.get(ref.name);
        if (prompt && !keyMayGet(deps, identityOf(ctx))(prompt)) {
          // Recorded as prompts/get records it: the rule of the procedure that renders it, by that procedure's path.
          recordRefusal(deps, ctx, keyPromptRefusal(deps, identityOf(ctx), prompt), prompt.procedure ?? ref.name);
          throw new CoreError('NOT_FOUND', `unknown prompt: ${ref.name.slice(0, 200)}`);
        }
        return { completion: await prompts.complete(ref.name, argument.name, argument.value, context?.arguments ?? {}) } as never;
      }
      const template = resources.getTemplate(ref.uri);
      const plain = template ? undefined : resources.get(ref.uri);
      // A template (or resource) an API key may not read is unknown to it, as in resources/list:
      // its completions are the values it offers.
      if (!(template ?? plain)) throw new CoreError('NOT_FOUND', 'unknown resource template');
      if (!keyMayRead(deps, identityOf(ctx))(template ?? plain!)) {
        recordRefusal(deps, ctx, keyResourceRefusal(), ref.uri);
        throw new CoreError('NOT_FOUND', 'unknown resource template');
      }
      if (!template) return EMPTY as never; // a plain resource has nothing to complete
      if (!template.complete) return EMPTY as never;
      return { completion: completeFrom(await template.complete(argument.name, argument.value), argument.value) } as never;
    } catch (err) {
      throw toMcpError(deps.services.logger, err, 'completion/complete');
    }
  });
}

/** What a completion asks about, as the security log names it: the prompt's name or the template's URI. */
function refName(ref: { type: string; name?: string; uri?: string }): string {
  return (ref.type === 'ref/prompt' ? ref.name : ref.uri) ?? '';
}
