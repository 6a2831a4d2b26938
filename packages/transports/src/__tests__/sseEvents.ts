/** `event:` + `data:` frames of a named-event SSE text (Anthropic, Responses), in order. */
export function sseEvents(sse: string): Array<{ event: string; data: any }> {
  return sse
    .split('\n\n')
    .filter(Boolean)
    .map((frame) => {
      const [eventLine, dataLine, ...rest] = frame.split('\n');
      if (!eventLine?.startsWith('event: ') || !dataLine?.startsWith('data: ') || rest.length)
        throw new Error(`not an event frame: ${frame}`);
      const data = JSON.parse(dataLine.slice(6));
      const event = eventLine.slice(7);
      // Both wire formats repeat the event name as the data's type.
      if (data.type !== event) throw new Error(`event ${event} carries type ${data.type}`);
      return { event, data };
    });
}
