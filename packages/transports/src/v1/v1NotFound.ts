import type { Handler } from 'hono';
import { CoreError } from '@ai-backend/core/internal';
import { sharedRouteError } from './sharedRouteError.js';

/** Any other path under /v1: OpenAI's error shape (Anthropic's for Anthropic clients), so each client reports it as such. */
export function v1NotFound(): Handler {
  return (c) =>
    sharedRouteError(
      c,
      new CoreError(
        'NOT_FOUND',
        `no route ${c.req.method} ${c.req.path.slice(0, 200)} under /v1 (POST /v1/chat/completions, /v1/responses, /v1/messages, /v1/embeddings, GET /v1/models)`,
      ),
    );
}
