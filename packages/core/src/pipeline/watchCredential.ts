import { SESSION_REVOKED, type AuthFacts, type Identity } from '../kernel/identity.js';
import type { Runtime } from '../runtime/Runtime.js';
import { KEY_CHANGED } from '../services/apiKeys/ApiKeyService.js';

/** What the stream's request presented: its bearer token, from where, to which URL. */
export interface PresentedCredential {
  bearer: string | null;
  ip: string;
  url: string;
  headers: Headers;
}

/**
 * Watch the credential a long-lived answer (an event stream) was opened with, for as long as it
 * stays open: access is checked when used, and a stream is used for as long as it is open. Every
 * `everyMs` the bearer token is verified again as a new request's would be (client address
 * included); `onLost` runs once when it no longer grants what it granted at the start: refused
 * (revoked, expired, a deleted user, an address its key no longer allows), or an administrator's
 * credential no longer an administrator's. An API key's change (revoked, rotated, its rules
 * changed: the KEY_CHANGED signal, from any instance) is checked at once rather than at the next
 * beat; the revocation of an OAuth access token's session (SESSION_REVOKED, from any instance)
 * ends the stream at once, with nothing to check: the session is gone. A store that cannot answer (UNAVAILABLE) decides nothing: the stream
 * stays, as it would
 * have been refused at its start only by what the store says. Returns the function that stops
 * watching (call it when the stream ends).
 */
export function watchCredential(
  runtime: Pick<Runtime, 'authenticate' | 'signals'>,
  facts: PresentedCredential,
  identity: Identity,
  everyMs: number,
  onLost: () => void,
): () => void {
  const token = facts.bearer;
  let over = false;
  let checking = false;
  const stop = () => {
    over = true;
    clearInterval(timer);
    off?.();
  };
  const check = async () => {
    if (over || checking || !token) return;
    checking = true;
    try {
      const r = await runtime.authenticate(token, { ip: facts.ip, request: facts } satisfies AuthFacts);
      if (over) return;
      if (r.ok ? holds(identity, r.identity) : r.error.appCode === 'UNAVAILABLE') return;
      stop();
      onLost();
    } catch {
      // An authenticator that throws decides nothing, as a store outage.
    } finally {
      checking = false;
    }
  };
  const timer = setInterval(() => void check(), everyMs);
  timer.unref?.();
  const keyId = identity.apiKey?.id;
  const sessionId = identity.sessionId;
  const off = keyId
    ? runtime.signals.subscribe(KEY_CHANGED, (id) => id === keyId && void check())
    : sessionId
      ? runtime.signals.subscribe(SESSION_REVOKED, (sid) => {
          if (over || sid !== sessionId) return;
          stop();
          onLost();
        })
      : undefined;
  return stop;
}

/** The same subject, and an administrator still when it was one. */
function holds(was: Identity, now: Identity): boolean {
  return now.sub === was.sub && (!was.isAdmin || now.isAdmin);
}
