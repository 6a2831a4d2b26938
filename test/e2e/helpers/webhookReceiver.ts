import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the receiver got. */
export interface ReceivedHook {
  headers: http.IncomingHttpHeaders;
  /** The raw body: signatures are over these exact bytes. */
  body: string;
  /** The body parsed (alerts are `{ id, event, data }`). */
  json: { id: string; event: string; data: Record<string, unknown> };
  event: string;
  key: string;
  signature: string;
  /** Status answered; null while the request is held open (never answered). */
  answered: number | null;
}

/** What to answer the n-th request (0-based): a status, or 'hold' to keep it open like a stalled receiver. */
export type Answer = (n: number) => number | 'hold';

/**
 * A local alert-webhook receiver on 127.0.0.1. `onRequest` runs after each request is recorded
 * (e.g. to kill the sender while an attempt is in flight).
 */
export async function webhookReceiver(answer: Answer = () => 204, onRequest?: (hook: ReceivedHook) => void) {
  const got: ReceivedHook[] = [];
  const held: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const a = answer(got.length);
      const hook: ReceivedHook = {
        headers: req.headers,
        body,
        json: JSON.parse(body),
        event: String(req.headers['x-ai-backend-event']),
        key: String(req.headers['idempotency-key']),
        signature: String(req.headers['x-ai-backend-signature']),
        answered: a === 'hold' ? null : a,
      };
      got.push(hook);
      if (a === 'hold') held.push(res);
      else res.writeHead(a).end();
      onRequest?.(hook);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    got,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    /** Change the answers from now on (a receiver that recovers). */
    setAnswer: (next: Answer) => (answer = next),
    close: () => {
      for (const r of held) r.destroy();
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}
