import { router } from '../../pipeline/init.js';
import { credentialProcedures } from './credentialProcedures.js';

/** The `gateway` namespace: upstream MCP servers behind our endpoint (docs/mcp-gateway.md). */
export const gatewayRouter = router({
  ...credentialProcedures,
});
