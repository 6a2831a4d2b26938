/**
 * The MCP wire objects the gateway carries between an upstream and our clients, as JSON shapes.
 * Declared here, not imported from `@modelcontextprotocol/client`: that client is an optional
 * peer (loaded on the first upstream connection), and core's published declarations must compile
 * in an app that does not have it (install-smoke type-checks them with skipLibCheck: false). The
 * values are the SDK client's own, validated by it; only their static type is this loose one.
 */
type JsonObject = { [key: string]: unknown };

export interface Tool extends JsonObject {
  name: string;
  title?: string;
  description?: string;
  inputSchema: { type: 'object'; properties?: { [key: string]: unknown }; required?: string[]; [key: string]: unknown };
  outputSchema?: JsonObject;
  annotations?: JsonObject;
}

export interface Prompt extends JsonObject {
  name: string;
  title?: string;
  description?: string;
  arguments?: { name: string; description?: string; required?: boolean }[];
}

export interface Resource extends JsonObject {
  uri: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
}

export interface ResourceTemplate extends JsonObject {
  uriTemplate: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
}

export interface CallToolResult extends JsonObject {
  content: JsonObject[];
  structuredContent?: JsonObject;
  isError?: boolean;
}

export interface GetPromptResult extends JsonObject {
  description?: string;
  messages: JsonObject[];
}

export interface ReadResourceResult extends JsonObject {
  contents: JsonObject[];
}

/** What completion/complete completes: a prompt's argument, or a resource template's variable. */
export type CompletionRef = { type: 'ref/prompt'; name: string } | { type: 'ref/resource'; uri: string };

export interface Completion extends JsonObject {
  values: string[];
  total?: number;
  hasMore?: boolean;
}
