// Several servers behind a load balancer share one Redis: sessions, rate limits, balances and
// ledgers are consistent across instances. MCP sessions: use stateless mode (or sticky sessions).
// Run two: PORT=8001 npx ai-backend serve --config ... ; PORT=8002 npx ai-backend serve --config ...
export default {
  host: '0.0.0.0',
  trustProxy: true,
  storage: { type: 'redis', redis: { host: '127.0.0.1', port: 6379, keyPrefix: 'ai-backend:' } },
  mcp: {
    sessionMode: 'stateless',
    auth: { authType: 'jwt' },
    rateLimiting: { enabled: true, windowMs: 60000, maxRequests: 100, maxToolCalls: 50 },
  },
  // JWT_SECRET from the environment; OAUTH_ENCRYPTION_KEY too if you enable OAuth.
};
