/** The commented starter config `ai-backend init` writes. */
export const STARTER_CONFIG = `// ai-backend configuration. Reference: docs/configuration.md
// Secrets belong in the environment: JWT_SECRET, OAUTH_ENCRYPTION_KEY, ANTHROPIC_API_KEY, ...
// First put JWT_SECRET (32+ random characters) in .env (authType 'jwt' below). Then: npx ai-backend config check
/** @type {import('ai-backend').ConfigInput} */
export default {
  // Where to listen. 127.0.0.1 keeps the server local; a public address needs authentication.
  port: 8000,
  host: '127.0.0.1',

  // Browsers allowed to call the server. '*' allows any origin without credentials.
  cors: { origin: ['http://localhost:3000'], credentials: false },

  // Embedded file store; use { type: 'redis', redis: { host, port } } for several servers.
  storage: { type: 'sqlite', dir: '.ai-backend-data' },

  mcp: {
    auth: {
      // 'oauth' (default) | 'jwt' | 'both' | 'none' (development only)
      authType: 'jwt',
      requireAuthForToolsList: false,
      requireAuthForToolsCall: true,
      publicTools: ['greeting', 'ping'],
      jwt: { requiredScopes: [] },
    },
    rateLimiting: { enabled: true, windowMs: 60000, maxRequests: 100, maxToolCalls: 50 },
  },

  // HS256 secret from JWT_SECRET (at least 32 bytes).
  jwt: { issuer: undefined, audience: undefined },

  // Administrators (by email or sub); tokens with the 'mcp:admin' scope also count.
  admin: { users: [] },

  // Folders the server exposes through the file tools. This one is the project folder, so it
  // blocks the server's own data (storage.dir above), .env files and keys.
  serverWorkspaces: {
    project: {
      path: process.cwd(),
      name: 'Project',
      readOnly: true,
      blockedPaths: ['**/.env', '**/.env.*', '**/.git/**', '.ai-backend-data/**', '**/.ai-backend-data/**'],
      blockedExtensions: ['.pem', '.key', '.p12', '.pfx'],
    },
  },

  // MCP resources without code (resources/list, mcp.getResources). Each workspace's files are
  // also offered as the template workspace://<id>/{+path}. Reads follow the workspace's rules.
  resources: {
    list: [{ uri: 'workspace://project/README.md', name: 'readme', title: 'Project README', mimeType: 'text/markdown' }],
    templates: [],
  },

  // AI providers the server pays for (keys from ANTHROPIC_API_KEY, OPENAI_API_KEY, ...).
  serverProviders: [],
};
`;
