import { currentToken, signOut } from './auth.js';
import type { Method, Output } from './types.js';

/** An error answer of a procedure, as /rpc sends it (JSON-RPC code, message, tRPC code in data). */
export class RpcError extends Error {
  constructor(
    message: string,
    readonly code: number,
    readonly trpcCode: string | undefined,
  ) {
    super(message);
  }
}

let nextId = 1;

/**
 * Call a procedure over /rpc with the signed-in user's token: the console goes through the same
 * entry point, browser guard and access policy as any client.
 */
export async function rpc<T = unknown>(method: string, params?: unknown): Promise<T> {
  const token = currentToken();
  const res = await fetch('/rpc', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, ...(params === undefined ? {} : { params }) }),
    credentials: 'omit',
  });
  let body: { result?: T; error?: { code: number; message: string; data?: { trpcCode?: string; code?: string } } };
  try {
    body = await res.json();
  } catch {
    throw new RpcError(`HTTP ${res.status}`, -32603, undefined);
  }
  if (body.error) {
    const trpcCode = body.error.data?.trpcCode ?? body.error.data?.code;
    // An expired or revoked token: back to the sign-in page.
    if (res.status === 401 || trpcCode === 'UNAUTHORIZED') signOut('Your session ended; sign in again.');
    throw new RpcError(body.error.message, body.error.code, trpcCode);
  }
  return body.result as T;
}

/** `rpc` for the server's own procedures: the name is checked and the answer typed from core's router. */
export function call<M extends Method>(method: M, params?: unknown): Promise<Output<M>> {
  return rpc<Output<M>>(method, params);
}
