import { createHash } from 'node:crypto';

/**
 * The names of helpers/oddToolNames.mjs (its tools and prompts; the script keeps its own copy, since
 * importing it starts the server) and what the gateway's names for them are checked against, for
 * mcp-gateway-tool-names and mcp-gateway-prompt-names.
 */
export const LONG_SERVER = 'a_forty_character_server_name_for_tools1';
/** The 8 hex of a name's SHA-256 the gateway appends to a name it had to shorten or change. */
export const shortHash = (name: string) => createHash('sha256').update(name).digest('hex').slice(0, 8);
const long = 'summarise_the_quarterly_report_of_'.repeat(5);
export const ODD_NAMES = [`${long}north`, `${long}south`, 'read file', 'admin/wipe', 'größe', 'echo'];
/** Named as the gateway shows 'read file': listed after it, so 'read file' keeps the name. */
export const IMPOSTOR = `read_file_${shortHash('read file')}`;
/** What MCP allows in a tool or prompt name. */
export const MCP_NAME = /^[A-Za-z0-9._-]{1,128}$/;
