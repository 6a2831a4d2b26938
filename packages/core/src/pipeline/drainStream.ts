import { isFinishEvent, isTextEvent } from '../kernel/streamEvents.js';
import type { Context } from './context.js';

/**
 * Entry points that answer once (/rpc, /mcp) read a streamed result to its end here. Event
 * contract of streamed procedures (kernel/streamEvents.ts): `{ type: 'text', delta }` events become MCP
 * progress notifications (progress = characters so far, message = the delta) when the client
 * asked for progress; the result is the `result` of the last `{ type: 'finish', result }`
 * event, or the list of all events when there is none. An error thrown mid-stream is the
 * call's error. Leaving early (the caller's signal) is the stream's own business: it watches
 * ctx.req.signal.
 */
export async function drainStream(stream: AsyncIterable<unknown>, ctx: Context): Promise<unknown> {
  const events: unknown[] = [];
  let finish: { result: unknown } | undefined;
  let chars = 0;
  for await (const ev of stream) {
    if (isFinishEvent(ev)) finish = { result: ev.result };
    else if (isTextEvent(ev)) {
      chars += ev.delta.length;
      // Progress is best effort: a client that cannot take it must not fail the call.
      // Inside an MCP task there is no stream for the deltas: the task's status says how far it got.
      // An empty delta moves nothing, and MCP progress must increase with each notification.
      if (ctx.mcp && ev.delta.length > 0)
        await ctx.mcp.progress(chars, undefined, ctx.mcp.taskId ? `${chars} characters generated` : ev.delta).catch(() => undefined);
    }
    if (!finish) events.push(ev);
  }
  return finish ? finish.result : events;
}
