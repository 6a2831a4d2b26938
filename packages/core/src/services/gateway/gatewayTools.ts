import type { Tool } from './mcpWire.js';

/** An upstream tool as clients see it: its definition under `<server>__<tool>`. */
export type GatewayTool = Tool & { server?: string; upstreamName?: string };

/** The two tools that stand for the tools of servers exposed as 'search'. */
export const SEARCH_TOOLS: ReadonlySet<string> = new Set(['search_tools', 'call_tool']);

/** Their definitions; our own text, never an upstream's. */
export function searchToolDefinitions(): GatewayTool[] {
  return [
    {
      name: 'search_tools',
      description:
        'Search the tools of the MCP servers behind this gateway that are not listed one by one. Returns the best matching tools with their descriptions and input schemas; call one with call_tool.',
      inputSchema: {
        type: 'object',
        properties: {
          query: { type: 'string', description: 'What the tool should do, in a few words' },
          limit: { type: 'integer', minimum: 1, maximum: 50, description: 'At most this many tools (default 10)' },
        },
        required: ['query'],
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    {
      name: 'call_tool',
      description: 'Call a tool found with search_tools, by its name, with arguments matching its input schema.',
      inputSchema: {
        type: 'object',
        properties: {
          name: { type: 'string', description: 'The tool name search_tools returned' },
          arguments: { type: 'object', description: "The tool's arguments" },
        },
        required: ['name'],
      },
    },
  ];
}
