/**
 * Counts open server-sent-event streams of /mcp (the ai_backend_mcp_streams gauge): a response
 * whose body is an event stream counts until the body ends, fails or the client cancels it.
 */
export class StreamCounter {
  private open = 0;

  get count(): number {
    return this.open;
  }

  /** `onEnd` runs once when the response is over: at once for a non-stream answer, else when its stream ends. */
  track(res: Response, onEnd: () => void = () => undefined): Response {
    if (!res.body || !res.headers.get('content-type')?.includes('text/event-stream')) {
      onEnd();
      return res;
    }
    this.open++;
    let counted = true;
    const done = () => {
      if (counted) {
        this.open--;
        onEnd();
      }
      counted = false;
    };
    const reader = res.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { done: end, value } = await reader.read();
          if (end) {
            done();
            controller.close();
          } else controller.enqueue(value);
        } catch (err) {
          done();
          controller.error(err);
        }
      },
      cancel(reason) {
        done();
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  }
}
