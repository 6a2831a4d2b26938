import { coreErrorOf, type CoreError } from '../kernel/CoreError.js';
import type { AuthFacts, Identity } from '../kernel/identity.js';
import type { Runtime } from '../runtime/Runtime.js';
import { keyRefusalEvent } from '../services/security/keyRefusalEvent.js';

/**
 * One HTTP request's credential, verified and counted: refused (`ok: false`), or an identity and,
 * for an API key over its requests per minute, the refusal the whole request gets (`refused`).
 */
export type RequestAuth = { ok: true; identity: Identity; refused: CoreError | null } | { ok: false; error: CoreError };

/** authenticateRequest bound to a runtime: what the routes outside the entry sequence (/health/ready, /metrics) are given. */
export type RequestAuthenticator = (token: string, facts: AuthFacts) => Promise<RequestAuth>;

/**
 * Verify the bearer credential of one HTTP request and, when it is an API key with a requests
 * per minute limit, count the request against that limit, whatever the request reaches: a
 * procedure, an MCP list or session request, /metrics, /health/ready. Every route that takes a
 * credential from a request verifies it here (RequestScope.open for the entry points, the health
 * and metrics routes directly), so no route serves a key past its limit; before, only procedure
 * calls were counted and a narrow key could poll /metrics or MCP lists without end. The request's
 * count covers its first procedure call (RequestScope); further calls of a batch count one each.
 * Re-verifying an open stream's credential (watchCredential) is not a request and does not count.
 * A request refused here is recorded here, once, in the security log (`key_refused`, with the
 * HTTP path: no call was read yet); its calls, refused with it on /rpc and /trpc, are not again.
 * `transport` labels that record.
 */
export async function authenticateRequest(
  runtime: Pick<Runtime, 'authenticate' | 'keys' | 'security'>,
  token: string,
  facts: AuthFacts,
  transport: string,
): Promise<RequestAuth> {
  const result = await runtime.authenticate(token, facts);
  if (!result.ok) return result;
  const grant = result.identity.apiKey;
  if (!grant?.requestsPerMinute) return { ok: true, identity: result.identity, refused: null };
  try {
    await runtime.keys.limits.request(grant);
    return { ok: true, identity: result.identity, refused: null };
  } catch (err) {
    const refused = coreErrorOf(err);
    if (!refused) throw err;
    const event = keyRefusalEvent(result.identity, refused, { transport, ip: facts.ip, path: pathOf(facts.request?.url) });
    if (event) runtime.security.record(event);
    return { ok: true, identity: result.identity, refused };
  }
}

function pathOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return new URL(url).pathname;
  } catch {
    return undefined;
  }
}
