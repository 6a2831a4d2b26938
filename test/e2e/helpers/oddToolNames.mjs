/**
 * An MCP server over stdio (the MCP SDK's own Server) whose tool names do not fit what clients
 * accept once the gateway puts `<server>__` before them: longer than 128 characters (two that
 * differ only past that point), with a space, a slash, non-ASCII letters. One more tool is named
 * as the shortened name of another would be, to check the gateway keeps the names apart. Each call
 * answers the name it was called by. Its prompts have the same names (and EXTRA_PROMPT one more),
 * and each answers the name it was got by.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListToolsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

const long = 'summarise_the_quarterly_report_of_'.repeat(5);
export const ODD_TOOL_NAMES = [`${long}north`, `${long}south`, 'read file', 'admin/wipe', 'größe', 'echo'];

const server = new Server({ name: 'odd-tool-names', version: '1' }, { capabilities: { tools: {}, prompts: {} } });
server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: [...ODD_TOOL_NAMES, ...(process.env.EXTRA_TOOL ? [process.env.EXTRA_TOOL] : [])].map((name) => ({
    name,
    description: `the tool ${name}`,
    inputSchema: { type: 'object', properties: {} },
  })),
}));
server.setRequestHandler(CallToolRequestSchema, (request) => ({ content: [{ type: 'text', text: `called ${request.params.name}` }] }));
server.setRequestHandler(ListPromptsRequestSchema, () => ({
  prompts: [...ODD_TOOL_NAMES, ...(process.env.EXTRA_PROMPT ? [process.env.EXTRA_PROMPT] : [])].map((name) => ({
    name,
    description: `the prompt ${name}`,
  })),
}));
server.setRequestHandler(GetPromptRequestSchema, (request) => ({
  messages: [{ role: 'user', content: { type: 'text', text: `prompt ${request.params.name}` } }],
}));
await server.connect(new StdioServerTransport());
