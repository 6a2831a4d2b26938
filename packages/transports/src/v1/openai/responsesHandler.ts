import type { Handler } from 'hono';
import type { EntryGateway } from '@ai-backend/core/internal';
import { wireFormatHandler } from '../shared/wireFormatHandler.js';
import { openAiError, type FieldNaming } from './openAiFormat.js';
import { responseBody, ResponseStreamWriter } from './responsesFormat.js';
import { toResponsesInput } from './toResponsesInput.js';
import type { StreamAdmission } from '../../edge/StreamAdmission.js';

/**
 * How a Responses request names the procedure's fields: `max_output_tokens`, `text.format` for the
 * structured output, `instructions` for the system prompt, and flat function tools.
 */
const RESPONSES_NAMING: FieldNaming = {
  names: {
    'options.maxTokens': 'max_output_tokens',
    'output.schema': 'text.format.schema',
    output: 'text.format',
    systemPrompt: 'instructions',
  },
  flatTools: true,
};

/**
 * POST /v1/responses: OpenAI's Responses API (text, function tools, structured output through
 * `text.format`, streaming events, usage) over ai.generateText / ai.streamText, with OpenAI-shaped
 * errors. Stateless: no stored responses, no previous_response_id.
 */
export function responsesHandler(getGateway: () => Promise<EntryGateway>, streams: StreamAdmission): Handler {
  return wireFormatHandler(getGateway, streams, {
    transport: 'openai',
    wire: 'openai-responses',
    parse: toResponsesInput,
    error: (err) => openAiError(err, RESPONSES_NAMING),
    body: (r, req) => responseBody(r, req.model),
    writer: (req) => new ResponseStreamWriter(req.model),
    // After the headers: the Responses API's `error` event ends the stream.
    streamError: (e, writer) =>
      writer.errorFrame((e.body as { error: { message: string; code: string | null; param: string | null } }).error),
  });
}
