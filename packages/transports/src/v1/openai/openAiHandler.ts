import type { Handler } from 'hono';
import type { EntryGateway } from '@ai-backend/core/internal';
import { wireFormatHandler } from '../shared/wireFormatHandler.js';
import { ChunkWriter, completionBody, openAiError } from './openAiFormat.js';
import { toChatInput } from './toChatInput.js';
import type { StreamAdmission } from '../../edge/StreamAdmission.js';

/**
 * POST /v1/chat/completions: the OpenAI Chat Completions wire format over ai.generateText
 * (`stream` absent or false) and ai.streamText (`stream: true`, server-sent events). The body
 * is only translated; identity, rate limits, input validation, prompts and metering are the
 * procedures' own, reached through core's invoke seam like /rpc and /mcp.
 */
export function chatCompletionsHandler(getGateway: () => Promise<EntryGateway>, streams: StreamAdmission): Handler {
  return wireFormatHandler(getGateway, streams, {
    transport: 'openai',
    wire: 'openai-chat',
    parse: toChatInput,
    error: (err, req) => openAiError(err, req?.naming),
    body: (r, req) => completionBody(r, req.model),
    writer: (req) => new ChunkWriter(req.model, req.includeUsage),
    streamError: (e) => `data: ${JSON.stringify(e.body)}\n\n`,
  });
}
