import type { Handler } from 'hono';
import type { EntryGateway } from '@ai-backend/core/internal';
import { wireFormatHandler } from '../shared/wireFormatHandler.js';
import { openAiError } from './openAiFormat.js';
import { responseBody, ResponseStreamWriter } from './responsesFormat.js';
import { toResponsesInput } from './toResponsesInput.js';
import type { StreamAdmission } from '../../edge/StreamAdmission.js';

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
    error: openAiError,
    body: (r, req) => responseBody(r, req.model),
    writer: (req) => new ResponseStreamWriter(req.model),
    // After the headers: the Responses API's `error` event ends the stream.
    streamError: (e, writer) =>
      writer.errorFrame((e.body as { error: { message: string; code: string | null; param: string | null } }).error),
  });
}
