import { createHash, randomBytes } from 'node:crypto';
import {
  createRequestStateCodec,
  ProtocolError,
  ProtocolErrorCode,
  type RequestStateCodec,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { Logger, ResolvedConfig, Storage } from '@ai-backend/core/internal';
import type { RequestScope } from '@ai-backend/core/internal';

/** The request scope the MCP call runs in (callContext's McpRequestFacts, not imported: it imports this file). */
function scopeOf(ctx: ServerContext): RequestScope | undefined {
  return (ctx.http?.authInfo?.extra?.facts as { scope?: RequestScope } | undefined)?.scope;
}

/**
 * The signed-in credential a call was made with: an API key by its id (least privilege: one of
 * the owner's keys never reaches what another key, or the owner's own sign-in, started; key ids
 * are unique, so `key:` never names a subject), else the subject.
 */
function credentialOf(scope: RequestScope | undefined): string | undefined {
  const identity = scope?.identity;
  if (!identity) return undefined;
  return identity.apiKey ? `key:${identity.apiKey.id}` : `sub:${identity.sub}`;
}

/** The caller a sealed state belongs to: another caller (or another of its owner's API keys) replaying it is refused. */
export function callerOf(ctx: ServerContext): string {
  const scope = scopeOf(ctx);
  return credentialOf(scope) ?? `ip:${scope?.facts.ip ?? ''}`;
}

/**
 * Whom a running task counts against (McpTasks' running limit): the subject, for all of its
 * credentials together (one more API key is not more room), else the client address.
 */
export function runnerOf(ctx: ServerContext): string {
  return subjectOrAddress(scopeOf(ctx));
}

/** A caller by subject when signed in (all of its credentials together), else by client address. */
export function subjectOrAddress(scope: RequestScope | undefined): string {
  return scope?.identity ? `sub:${scope.identity.sub}` : `ip:${scope?.facts.ip ?? ''}`;
}

/**
 * Who owns a task (MCP Tasks) started or asked about in this request: a signed-in caller's
 * credential (the API key it used, else its subject); for an anonymous caller, nobody but the
 * holder of the task's id (ANONYMOUS_TASK_OWNER: the id is then a 256-bit random handle). Not the
 * client address: behind a proxy without trustProxy every anonymous client has the same one, and
 * would have owned every anonymous task.
 */
export function taskOwnerOf(ctx: ServerContext): string {
  return credentialOf(scopeOf(ctx)) ?? ANONYMOUS_TASK_OWNER;
}

/** The owner of anonymous tasks: whoever holds the task's id (see taskOwnerOf). */
export const ANONYMOUS_TASK_OWNER = 'anonymous';

/** What a sealed state was minted for: one tool (or prompt, or resource) called with the same arguments. */
export interface StateUse {
  kind: 'tool' | 'prompt' | 'resource';
  /** The tool or prompt name, or the resource URI. */
  name: string;
  /** The call's arguments (absent counts as `{}`). */
  args?: unknown;
}

/** The seal of multi round-trip requests: see createRequestStateSeal. */
export interface RequestStateSeal {
  /** The SDK's hook (McpServer `requestState.verify`): integrity, expiry and caller, before any handler runs. */
  readonly codec: RequestStateCodec<unknown>;
  /** Seal `payload` for the next round of `use`, by the caller of `ctx`. */
  mint(payload: unknown, ctx: ServerContext, use: StateUse): Promise<string>;
  /**
   * The payload of the state this request carries (the hook verified it), if `use` is what it was
   * minted for and it was not used before; else -32602. Undefined when the request carries none.
   */
  claim(ctx: ServerContext, use: StateUse): Promise<unknown>;
  /** Verify a sealed state kept elsewhere (a task's record) for the caller of `ctx`, then claim it for `use`. */
  open(sealed: string, ctx: ServerContext, use: StateUse): Promise<unknown>;
}

/** Inside the HMAC envelope: the payload, a single-use id and the use it is bound to. */
interface Sealed {
  v: unknown;
  /** Random id: its first claim is recorded, a second is refused. */
  n: string;
  /** Hash of the use (kind, name, arguments). */
  u: string;
}

const TTL_SECONDS = 15 * 60;
/** Used ids are remembered a little longer than a state lives, for clocks that differ between instances. */
const USED_TTL_MS = (TTL_SECONDS + 60) * 1000;

/** JSON with object keys sorted, so the same arguments hash the same whatever their order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

const useTag = (use: StateUse) =>
  createHash('sha256')
    .update(`${use.kind}\n${use.name}\n${canonicalJson(use.args ?? {})}`)
    .digest('base64url');

const isSealed = (s: unknown): s is Sealed =>
  !!s && typeof s === 'object' && typeof (s as Sealed).n === 'string' && typeof (s as Sealed).u === 'string';

/** The SDK's own answer to a bad state, so a client cannot tell which check failed. */
const refused = () =>
  new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid or expired requestState', { reason: 'invalid_request_state' });

/**
 * The `requestState` seal of multi round-trip requests (MCP 2026-07-28): the client carries the
 * state between rounds and must not be able to alter it, so it is sealed with the SDK's HMAC
 * codec, bound to the caller and short-lived (15 minutes). It is also bound to its use (the tool,
 * prompt or resource, and a hash of the arguments: another tool or other arguments are refused)
 * and single use: its id is recorded in the server's shared store on first claim (Redis or
 * PostgreSQL when instances share one, so a state used on one instance is refused on every
 * other), each record expiring shortly after the state could have, so the set holds at most the
 * states minted in the last 16 minutes. The key is derived from jwt.secret when one is
 * configured, so every instance sharing the config accepts every other's state (no sticky
 * routing); without it, a per-process key (one instance, or sticky routing).
 */
/** What a seal uses: the JWT secret it derives its key from, a log, and the shared store its single-use marks go to. */
export interface RequestStateSealDeps {
  readonly config: Pick<ResolvedConfig, 'jwt'>;
  readonly logger: Logger;
  readonly shared: Pick<Storage, 'compareAndSet'>;
}

export function createRequestStateSeal(deps: RequestStateSealDeps): RequestStateSeal {
  const secret = deps.config.jwt.secret;
  const key = secret ? createHash('sha256').update('ai-backend mcp requestState\n').update(secret).digest() : randomBytes(32);
  const codec = createRequestStateCodec<unknown>({ key, ttlSeconds: TTL_SECONDS, bind: callerOf });

  const consume = async (state: unknown, use: StateUse): Promise<unknown> => {
    if (!isSealed(state) || state.u !== useTag(use)) {
      deps.logger.debug('MCP requestState refused: minted for another use', { kind: use.kind });
      throw refused();
    }
    // Storage down: the state is refused (the client starts the call again), never accepted twice.
    const first = await deps.shared.compareAndSet(`mcp:rs:used:${state.n}`, undefined, 1, { ttlMs: USED_TTL_MS });
    if (!first) {
      deps.logger.debug('MCP requestState refused: already used', { kind: use.kind });
      throw refused();
    }
    return state.v;
  };

  return {
    codec,
    mint: (payload, ctx, use) => codec.mint({ v: payload, n: randomBytes(16).toString('base64url'), u: useTag(use) } satisfies Sealed, ctx),
    async claim(ctx, use) {
      const state = ctx.mcpReq.requestState();
      return state === undefined ? undefined : consume(state, use);
    },
    async open(sealed, ctx, use) {
      let state: unknown;
      try {
        state = await codec.verify(sealed, ctx);
      } catch {
        throw refused();
      }
      return consume(state, use);
    },
  };
}
