import { describe, expect, it } from 'vitest';
import { CoreError } from '../kernel/CoreError.js';
import { SESSION_REVOKED, type AuthResult, type Identity } from '../kernel/identity.js';
import { LocalSignals } from '../kernel/Signals.js';
import { KEY_CHANGED } from '../services/apiKeys/ApiKeyService.js';
import { watchCredential, type PresentedCredential } from './watchCredential.js';

const facts: PresentedCredential = { bearer: 'token', ip: '127.0.0.1', url: 'http://127.0.0.1/mcp', headers: new Headers() };
const admin = { sub: 'ops', isAdmin: true, scopes: ['mcp:admin'] } as unknown as Identity;
const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A watch over an authenticator that answers `answers` in turn (the last one again and again). */
function watching(identity: Identity, answers: AuthResult[], everyMs = 20) {
  const signals = new LocalSignals();
  let calls = 0;
  let lost = 0;
  const runtime = {
    signals,
    authenticate: async () => answers[Math.min(calls++, answers.length - 1)]!,
  };
  const stop = watchCredential(runtime, facts, identity, everyMs, () => lost++);
  return { signals, stop, calls: () => calls, lost: () => lost };
}

describe('watchCredential', () => {
  it('keeps a stream whose credential holds, and cuts it once when an administrator is no longer one', async () => {
    const w = watching(admin, [
      { ok: true, identity: admin },
      { ok: true, identity: { ...admin, isAdmin: false } as Identity },
    ]);
    await tick(30);
    expect(w.lost()).toBe(0);
    await tick(80);
    expect(w.lost()).toBe(1);
    const calls = w.calls();
    await tick(60);
    // Stopped after the loss: no more checks, no second call.
    expect(w.calls()).toBe(calls);
    expect(w.lost()).toBe(1);
  });

  it('a refused credential cuts; a store that cannot answer decides nothing', async () => {
    const down = watching(admin, [{ ok: false, error: new CoreError('UNAVAILABLE', 'storage is unavailable') }]);
    await tick(100);
    expect(down.calls()).toBeGreaterThan(1);
    expect(down.lost()).toBe(0);
    down.stop();
    const revoked = watching(admin, [{ ok: false, error: new CoreError('INVALID_TOKEN', 'API key revoked') }]);
    await tick(60);
    expect(revoked.lost()).toBe(1);
  });

  it("checks at once on its key's change signal, not on another key's; stop() ends the watch", async () => {
    const keyed = { ...admin, apiKey: { id: 'k1' } } as unknown as Identity;
    const w = watching(keyed, [{ ok: false, error: new CoreError('INVALID_TOKEN', 'API key revoked') }], 60_000);
    await w.signals.publish(KEY_CHANGED, 'k2');
    await tick(10);
    expect(w.calls()).toBe(0);
    await w.signals.publish(KEY_CHANGED, 'k1');
    await tick(10);
    expect(w.lost()).toBe(1);
    const other = watching(keyed, [{ ok: false, error: new CoreError('INVALID_TOKEN', 'API key revoked') }], 60_000);
    other.stop();
    await other.signals.publish(KEY_CHANGED, 'k1');
    await tick(10);
    expect(other.calls()).toBe(0);
  });

  it("ends at once on its OAuth session's revocation signal, without a check; another session's signal leaves it", async () => {
    const token = { sub: 'u1', isAdmin: false, scopes: ['mcp'], via: 'oauth', sessionId: 's1' } as Identity;
    // The authenticator would still accept it (a session cached elsewhere): the signal alone decides.
    const w = watching(token, [{ ok: true, identity: token }], 60_000);
    await w.signals.publish(SESSION_REVOKED, 's2');
    await tick(10);
    expect(w.lost()).toBe(0);
    await w.signals.publish(SESSION_REVOKED, 's1');
    expect(w.lost()).toBe(1);
    await w.signals.publish(SESSION_REVOKED, 's1');
    expect(w.lost()).toBe(1);
    expect(w.calls()).toBe(0);
  });
});
