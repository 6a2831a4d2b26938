import { defineConfig } from 'ai-backend';
import { weatherRouter } from './weatherRouter.js';

// npx ai-backend serve --config examples/custom-router/ai-backend.config.ts
export default defineConfig({
  port: 8000,
  storage: { type: 'memory' },
  mcp: { auth: { authType: 'jwt' } },
  customRouters: { weather: weatherRouter },
});
