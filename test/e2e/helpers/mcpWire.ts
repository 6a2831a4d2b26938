/** Raw Streamable HTTP helpers for MCP wire-level tests (no SDK client in between). */

export interface SseEvent {
  id?: string;
  event?: string;
  retry?: number;
  data: string;
}

export const LATEST = '2025-11-25';

export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    if (!block.trim() || block.startsWith(':')) continue;
    const e: SseEvent = { data: '' };
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      const at = line.indexOf(':');
      if (at === 0) continue; // comment (keep-alive)
      const field = at === -1 ? line : line.slice(0, at);
      const value = at === -1 ? '' : line.slice(at + 1).replace(/^ /, '');
      if (field === 'id') e.id = value;
      else if (field === 'event') e.event = value;
      else if (field === 'retry') e.retry = Number(value);
      else if (field === 'data') data.push(value);
    }
    e.data = data.join('\n');
    events.push(e);
  }
  return events;
}

/** JSON-RPC messages in SSE events (priming events with empty data are skipped). */
export function messagesOf(events: SseEvent[]): Array<Record<string, any>> {
  return events.filter((e) => e.data.trim() !== '').map((e) => JSON.parse(e.data));
}

/** Read an SSE body until `until` holds for the events so far (or the stream ends), then cancel it. */
export async function readSse(res: Response, until: (events: SseEvent[]) => boolean = () => false, timeoutMs = 5000): Promise<SseEvent[]> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`SSE timeout; got so far: ${text.slice(0, 2000)}`);
      const next = await Promise.race([reader.read(), new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), left))]);
      if (next === 'timeout') throw new Error(`SSE timeout; got so far: ${text.slice(0, 2000)}`);
      if (next.done) return parseSse(text);
      text += next.value;
      const events = parseSse(text.slice(0, text.lastIndexOf('\n\n') + 2));
      if (until(events)) return events;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

export interface WireSession {
  url: string;
  sessionId: string;
  headers(extra?: Record<string, string>): Record<string, string>;
  post(message: unknown, extra?: Record<string, string>): Promise<Response>;
}

const ACCEPT = 'application/json, text/event-stream';

/** initialize + notifications/initialized over raw HTTP; returns a session to post to. */
export async function openWireSession(
  url: string,
  capabilities: Record<string, unknown> = {},
  protocolVersion = LATEST,
): Promise<WireSession> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion, capabilities, clientInfo: { name: 'wire', version: '1' } },
    }),
  });
  if (res.status !== 200) throw new Error(`initialize: ${res.status} ${await res.text()}`);
  const sessionId = res.headers.get('mcp-session-id') ?? '';
  await res.body?.cancel();
  const headers = (extra: Record<string, string> = {}) => ({
    'content-type': 'application/json',
    accept: ACCEPT,
    'mcp-protocol-version': protocolVersion,
    ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
    ...extra,
  });
  const post = (message: unknown, extra?: Record<string, string>) =>
    fetch(url, { method: 'POST', headers: headers(extra), body: JSON.stringify(message) });
  const initialized = await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
  if (initialized.status !== 202) throw new Error(`initialized: ${initialized.status}`);
  return { url, sessionId, headers, post };
}

export const call = (id: number, name: string, args: Record<string, unknown> = {}, meta?: Record<string, unknown>) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) },
});

/** The 2026-07-28 per-request envelope a raw request carries in `params._meta`. */
export const envelope2026 = (client: string, capabilities: Record<string, unknown> = {}) => ({
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: client, version: '1' },
  'io.modelcontextprotocol/clientCapabilities': capabilities,
});

/**
 * A raw 2026-07-28 POST as the v2 client sends it: `meta` (envelope2026) in `params._meta`, and the
 * MCP-Protocol-Version, Mcp-Method and Mcp-Name headers mirroring the body (Mcp-Name: a tool's
 * name, a task's id). `headers` are added last (a forwarded address, a token, `Mcp-Param-*`).
 */
export function modernPost(
  id: number,
  method: string,
  params: Record<string, unknown>,
  meta: Record<string, unknown>,
  headers: Record<string, string> = {},
): RequestInit {
  const name = method === 'tools/call' ? params.name : method.startsWith('tasks/') ? params.taskId : undefined;
  return {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(name !== undefined ? { 'mcp-name': String(name) } : {}),
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } }),
  };
}

/** The one JSON-RPC message of a 2026-07-28 answer, a JSON body or a one-event stream. */
export async function modernReply(res: Response): Promise<{ result?: any; error?: { code: number; message: string } }> {
  const text = await res.text();
  return res.headers.get('content-type')?.includes('text/event-stream') ? JSON.parse(/^data: (.*)$/m.exec(text)![1]!) : JSON.parse(text);
}
