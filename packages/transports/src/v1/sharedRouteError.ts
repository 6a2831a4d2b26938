import type { Context as HonoContext } from 'hono';
import type { EntryGateway } from '@ai-backend/core/internal';
import { errorResponse } from './shared/wireFormatHandler.js';
import { anthropicError } from './anthropic/anthropicFormat.js';
import { openAiError } from './openai/openAiFormat.js';

/** Anthropic's clients send `anthropic-version` on every request; they read Anthropic's shapes. */
export const wantsAnthropic = (c: HonoContext) => c.req.header('anthropic-version') !== undefined;

/**
 * An error on a /v1 route both vendors' clients call (`GET /v1/models`, `/v1/models/{id}`, an
 * unknown path): in Anthropic's shape for a request that says `anthropic-version` (every
 * Anthropic client sends it, and reads its errors in that shape), else OpenAI's.
 */
export function sharedRouteError(
  c: HonoContext,
  err: unknown,
  gateway?: EntryGateway,
  extraHeaders: Record<string, string> = {},
): Response {
  if (wantsAnthropic(c)) return errorResponse(c, anthropicError(err), gateway, 'anthropic', extraHeaders);
  return errorResponse(c, openAiError(err), gateway, 'openai', extraHeaders);
}
