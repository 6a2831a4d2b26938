// The smallest useful config: JWT sign-in, one read-only workspace, the file store.
// Run from this folder: JWT_SECRET=$(openssl rand -hex 32) npx ai-backend serve
// Get a token:          npx ai-backend token --sub alice --scope mcp mcp:call
export default {
  port: 8000,
  mcp: { auth: { authType: 'jwt', publicTools: ['greeting', 'ping'] } },
  serverWorkspaces: {
    docs: { path: new URL('.', import.meta.url).pathname, name: 'Example folder', readOnly: true, blockedPaths: ['**/.env'] },
  },
};
