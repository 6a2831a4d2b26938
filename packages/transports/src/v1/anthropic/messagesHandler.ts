import type { Handler } from 'hono';
import { decisionError, type EntryGateway } from '@ai-backend/core/internal';
import { errorResponse, jsonResponse, readBody, wireFormatHandler } from '../shared/wireFormatHandler.js';
import { serveEntry } from '../../edge/serveEntry.js';
import { anthropicError, messageBody, MessageStreamWriter } from './anthropicFormat.js';
import { countTokens, toMessagesInput } from './toMessagesInput.js';
import type { StreamAdmission } from '../../edge/StreamAdmission.js';

/**
 * POST /v1/messages: Anthropic's Messages wire format over ai.generateText (`stream` absent or
 * false) and ai.streamText (`stream: true`, Anthropic's event stream). Identity comes from
 * `Authorization: Bearer` or `x-api-key` (requestFacts); everything else is the procedures'.
 */
export function messagesHandler(getGateway: () => Promise<EntryGateway>, streams: StreamAdmission): Handler {
  return wireFormatHandler(getGateway, streams, {
    transport: 'anthropic',
    wire: 'anthropic-messages',
    parse: toMessagesInput,
    error: anthropicError,
    body: (r, req) => messageBody(r, req.model),
    writer: (req) => new MessageStreamWriter(req.model),
    streamError: (e) => `event: error\ndata: ${JSON.stringify(e.body)}\n\n`,
  });
}

/**
 * POST /v1/messages/count_tokens: `{ input_tokens }`, the estimate metering reserves for the
 * input (see countTokens). Same identity and access rules as /v1/messages; nothing is charged.
 */
export function countTokensHandler(getGateway: () => Promise<EntryGateway>): Handler {
  return async (c) => {
    const gateway = await getGateway();
    return serveEntry<unknown>(c, gateway, {
      transport: 'anthropic',
      refusals: 'http',
      // Nothing is called: no tool call to count.
      toolCalls: 'per-call',
      async readCalls(c) {
        const body = await readBody(c, gateway);
        if (!body.ok) return errorResponse(c, anthropicError(body.error), undefined, 'anthropic');
        // count_tokens takes no max_tokens; the translation needs one.
        const value =
          typeof body.value === 'object' && body.value !== null && !Array.isArray(body.value)
            ? { max_tokens: 1, ...body.value }
            : body.value;
        return { calls: [{ kind: 'procedure', path: 'ai.generateText' }], parsed: value };
      },
      refuse: (c, _scope, error, _status, headers) => errorResponse(c, anthropicError(error), gateway, 'anthropic', headers),
      async run(c, scope, value) {
        // Nothing is invoked, so the call's access decision (a key's tools rule and scopes) is
        // enforced here: a caller counts tokens only for a call it may make.
        const decision = scope.decide({ kind: 'procedure', path: 'ai.generateText' });
        if (!decision.allowed) return errorResponse(c, anthropicError(decisionError(decision)), gateway, 'anthropic');
        try {
          // The model is checked as a call would check it (syntax, allow and block lists, the key's rules).
          const { input } = toMessagesInput(value, c.req.raw.headers, gateway.config);
          gateway.checkCallModel(input as Parameters<EntryGateway['checkCallModel']>[0], scope.identity);
          return jsonResponse(c, { input_tokens: countTokens(value, gateway.config) });
        } catch (err) {
          return errorResponse(c, anthropicError(err), undefined, 'anthropic');
        }
      },
    });
  };
}
