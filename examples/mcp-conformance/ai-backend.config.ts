/**
 * The MCP conformance fixture server: `npx ai-backend serve --config examples/mcp-conformance/ai-backend.config.ts`
 * then `npx conformance server --url http://127.0.0.1:8000/mcp`. Loopback only, no auth (the
 * suite connects anonymously), in-memory storage.
 */
import { defineConfig } from 'ai-backend';
import { conformanceRouter } from './conformanceRouter.js';

export default defineConfig({
  host: '127.0.0.1',
  port: 8000,
  storage: { type: 'memory' },
  // The conformance suite is one client running 50+ scenarios back to back: several hundred /mcp
  // requests a minute, past the default per-caller limits (docs/security.md), so they are off here.
  mcp: { auth: { authType: 'none' }, rateLimiting: { enabled: false } },
  monitoring: { logging: { level: 'warn' } },
  customRouters: { conformance: conformanceRouter },
});
