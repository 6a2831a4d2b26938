import { currentToken } from './auth.js';

/**
 * A minimal MCP client over Streamable HTTP for the MCP view: it initializes a session with the
 * signed-in user's token and lists and calls what any MCP client would see. Answers may come as
 * JSON or as one server-sent event; both are read.
 */
export class McpClient {
  private session: string | null = null;
  private id = 1;
  private protocol = '2025-06-18';

  private async send(method: string, params?: unknown, notification = false): Promise<unknown> {
    const token = currentToken();
    const res = await fetch('/mcp', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': this.protocol,
        ...(this.session ? { 'mcp-session-id': this.session } : {}),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        method,
        ...(notification ? {} : { id: this.id++ }),
        ...(params === undefined ? {} : { params }),
      }),
    });
    this.session = res.headers.get('mcp-session-id') ?? this.session;
    if (notification) return undefined;
    const text = await res.text();
    const json = (res.headers.get('content-type') ?? '').includes('text/event-stream')
      ? text
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => JSON.parse(l.slice(5)) as { id?: number; result?: unknown; error?: { message: string } })
          .find((m) => 'result' in m || 'error' in m)
      : text
        ? (JSON.parse(text) as { result?: unknown; error?: { message: string } })
        : undefined;
    if (!json) throw new Error(`MCP ${method}: HTTP ${res.status}`);
    if (json.error) throw new Error(`MCP ${method}: ${json.error.message}`);
    return json.result;
  }

  async connect(): Promise<{ serverInfo?: { name: string; version: string }; capabilities?: Record<string, unknown> }> {
    const init = (await this.send('initialize', {
      protocolVersion: this.protocol,
      capabilities: {},
      clientInfo: { name: 'ai-backend-console', version: '1' },
    })) as { protocolVersion: string; serverInfo?: { name: string; version: string }; capabilities?: Record<string, unknown> };
    this.protocol = init.protocolVersion;
    await this.send('notifications/initialized', undefined, true);
    return init;
  }

  request<T>(method: string, params?: unknown): Promise<T> {
    return this.send(method, params) as Promise<T>;
  }

  /** End the session (DELETE), best effort. */
  async close(): Promise<void> {
    if (!this.session) return;
    const token = currentToken();
    await fetch('/mcp', {
      method: 'DELETE',
      headers: { 'mcp-session-id': this.session, ...(token ? { authorization: `Bearer ${token}` } : {}) },
    }).catch(() => undefined);
    this.session = null;
  }
}
