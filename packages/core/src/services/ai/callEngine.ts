/**
 * The AI call engine: what runs a generate, stream or embed call (prepareCall, the attempt loop,
 * accounting, output validation). AiService loads it on the first AI call, so a server that has
 * not made one has not loaded its code (docs/architecture.md#lazy-namespaces).
 * @module
 */
export { runGenerateText } from './runGenerateText.js';
export { runStreamText } from './runStreamText.js';
export { runEmbed } from './runEmbed.js';
