import type { Client } from '@modelcontextprotocol/client';
import type { CallToolResult, Tool } from './mcpWire.js';
import type { OpenedUpstream } from './openUpstream.js';
import { postToolCall } from './postToolCall.js';
import { callAsTask } from './callAsTask.js';
import type { CallOptions } from './callOptions.js';

/** The SDK's own type of a listed tool: the definitions we keep are the client's values (mcpWire.ts). */
type SdkToolDefinition = NonNullable<NonNullable<Parameters<Client['callTool']>[1]>['toolDefinition']>;

/**
 * tools/call of `name` on an open upstream, the way its transport and the tool want it: a
 * task-only tool as a task (callAsTask), on a 2025 Streamable HTTP session as our own POST
 * (postToolCall), else through the SDK client with the definition we listed.
 */
export async function callOnUpstream(
  o: OpenedUpstream,
  definition: Tool | undefined,
  name: string,
  args: Record<string, unknown>,
  opts: CallOptions,
  limits: { timeoutMs: number; maxResultBytes: number },
): Promise<CallToolResult> {
  // A tool the upstream runs only as a task: created, waited for and its result fetched here (callAsTask).
  if ((definition?.execution as { taskSupport?: unknown } | undefined)?.taskSupport === 'required')
    return callAsTask(o.client, name, args, {
      timeoutMs: limits.timeoutMs,
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.onProgress ? { onProgress: opts.onProgress, watchProgress: o.watchProgress } : {}),
    });
  // A 2025 Streamable HTTP session: our own POST (the SDK client's transport cost most of a call).
  const session = o.httpSession();
  if (session) {
    return postToolCall(session, name, args, {
      timeoutMs: limits.timeoutMs,
      maxBytes: limits.maxResultBytes,
      ...opts,
    });
  }
  const result = await o.client.callTool(
    { name, arguments: args },
    {
      timeout: limits.timeoutMs,
      // The definition we listed: without it the client relists the upstream's tools before a
      // call whose list carried no cache hint (for output validation and header mirroring).
      ...(definition ? { toolDefinition: definition as SdkToolDefinition } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.onProgress
        ? {
            onprogress: (p: { progress: number; total?: number; message?: string }) => opts.onProgress!(p.progress, p.total, p.message),
          }
        : {}),
    },
  );
  return result as CallToolResult;
}
