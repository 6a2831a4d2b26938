/**
 * The handlers of the /v1 wire formats (OpenAI chat completions, responses, embeddings and models;
 * Anthropic messages), in one module that createServer imports on the first /v1 request, so a
 * server that is never asked in these formats does not load their code (docs/architecture.md,
 * "Heavy dependencies load on first use").
 */
export { chatCompletionsHandler } from './openai/openAiHandler.js';
export { modelHandler, modelsHandler } from './modelsHandler.js';
export { v1NotFound } from './v1NotFound.js';
export { countTokensHandler, messagesHandler } from './anthropic/messagesHandler.js';
export { responsesHandler } from './openai/responsesHandler.js';
export { embeddingsHandler } from './openai/embeddingsHandler.js';
