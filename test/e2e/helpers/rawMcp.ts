/**
 * A raw MCP Streamable HTTP client over fetch, for tests that check HTTP-level answers
 * (status codes, WWW-Authenticate, RateLimit headers) that the SDK client hides.
 */

export interface JsonRpcMessage {
  jsonrpc: '2.0';
  id?: string | number | null;
  result?: any;
  error?: { code: number; message: string; data?: any };
}

export interface McpReply {
  status: number;
  headers: Headers;
  /** The JSON-RPC response (from a JSON body or the SSE stream), if any. */
  message: JsonRpcMessage | undefined;
}

const PROTOCOL = '2025-06-18';

/** Read a JSON-RPC answer from a JSON body or an SSE stream (the first `data:` carrying JSON-RPC). */
export async function readMcpReply(res: Response): Promise<McpReply> {
  const text = await res.text();
  let message: JsonRpcMessage | undefined;
  if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    for (const line of text.split('\n')) {
      if (!line.startsWith('data:')) continue;
      try {
        const parsed = JSON.parse(line.slice(5).trim());
        if (parsed?.jsonrpc === '2.0') {
          message = parsed;
          break;
        }
      } catch {
        // priming events carry no JSON
      }
    }
  } else if (text) {
    message = JSON.parse(text);
  }
  return { status: res.status, headers: res.headers, message };
}

export class RawMcp {
  sessionId: string | undefined;
  private nextId = 1;

  constructor(
    url: string,
    /** Bearer token sent on every request, if any. */
    public token?: string,
    /** How to reach the server: in-process `app.fetch` for example; default global fetch on `url`. */
    private readonly call: (path: string, init: RequestInit) => Promise<Response> = (p, init) => fetch(url + p, init),
  ) {}

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': PROTOCOL,
      ...(this.sessionId ? { 'mcp-session-id': this.sessionId } : {}),
      ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
      ...extra,
    };
  }

  async send(method: string, params?: Record<string, unknown>): Promise<McpReply> {
    const res = await this.call('/mcp', {
      method: 'POST',
      headers: this.headers(),
      body: JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method, ...(params ? { params } : {}) }),
    });
    return readMcpReply(res);
  }

  /** initialize + notifications/initialized; keeps the session id when it succeeds. */
  async initialize(): Promise<McpReply> {
    const reply = await this.send('initialize', {
      protocolVersion: PROTOCOL,
      capabilities: {},
      clientInfo: { name: 'raw-test', version: '1' },
    });
    const sid = reply.headers.get('mcp-session-id');
    if (reply.status === 200 && sid) {
      this.sessionId = sid;
      const ack = await this.call('/mcp', {
        method: 'POST',
        headers: this.headers(),
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      });
      await ack.text();
    }
    return reply;
  }

  listTools(): Promise<McpReply> {
    return this.send('tools/list');
  }

  callTool(name: string, args: Record<string, unknown> = {}): Promise<McpReply> {
    return this.send('tools/call', { name, arguments: args });
  }
}
