import { createHash } from 'node:crypto';
import type { ResponseCacheConfig } from '../../../config/sections/aiRoutes.js';
import type { Identity } from '../../../kernel/identity.js';
import type { Logger } from '../../../kernel/Logger.js';
import { FAMILY_LISTED } from '../../../kernel/ownerListings.js';
import type { Storage } from '../../../kernel/Storage.js';
import type { Metrics } from '../../../observability/Metrics.js';

/**
 * What a request says of the cache: use it (`on`), leave it (`off`: neither read nor stored), or skip the lookup and store the fresh answer
 * (`refresh`).
 */
export type CacheDirective = 'on' | 'off' | 'refresh';

/** A cached answer: what the model said and what it cost, never the prompt, a key or the caller. */
export interface CachedAnswer {
  text: string;
  finishReason: string;
  /** The stop sequence the answer stopped on, when its provider named it (the cache key holds the call's stop sequences). */
  stopSequence?: string;
  provider: string;
  model: string;
  /** Served by another target than the one asked for (a fallback, a route's retry): a hit names that target as the answer did. */
  fallback?: true;
  usage: { inputTokens: number | null; outputTokens: number | null; totalTokens: number | null };
  /** Tokens the original call was charged for (before the fee), and its price at the pricing table. */
  tokensUsed: number;
  costUsd?: number;
  toolCalls?: Array<{ toolCallId: string; toolName: string; input: unknown }>;
  object?: unknown;
  /**
   * A plain answer passed through (docs/ai.md#pass-through): the upstream's body as it came (UTF-8
   * JSON), which a plain call of the same format is given again as it is, with every field the
   * fields above do not hold (thinking blocks, logprobs, `stop_sequence`, further choices).
   */
  wire?: { body: string; contentType: string };
  /** Stored from a stream, which is always read on the SDK path (cacheForm.ts): an answer in our encoding. */
  streamed?: true;
  storedAt: number;
}

/** What makes two requests the same: the model after name resolution and everything that shapes the answer. */
export interface CacheRequest {
  /** `route:<name>` or `provider/model` (aliases and bare ids resolved, so their spellings share entries). */
  model: string;
  content?: string | undefined;
  systemPrompt?: string | undefined;
  /** The server prompts each `@name` stands for, in `systemPrompt` and system messages (hashed into the key, never stored). */
  systemPromptText?: string[] | undefined;
  messages?: unknown;
  tools?: unknown;
  toolChoice?: unknown;
  output?: unknown;
  maxTokens: number;
  temperature?: number | undefined;
  /** The other sampling options (topP, stopSequences, seed), when the call sets any. */
  sampling?: unknown;
  /**
   * A /v1 call's own request (its format, the body's fields other than `model` and the stream
   * switches, the headers the pass-through forwards): the fast path forwards all of it, so fields
   * the translation above drops (`top_k`, `stop`, `n`, `response_format`, `anthropic-beta` …)
   * change the answer and must change the key.
   */
  wire?: unknown;
}

const PREFIX = FAMILY_LISTED.responseCache;
/** Entries listed and deleted at a time by clear(). */
const CLEAR_PAGE = 500;

/**
 * JSON with every object's keys in sorted order: the same request sent with its fields (a /v1
 * body's parameters, a tool's JSON schema) in another order is the same request, so the same
 * entry. Arrays keep their order (messages, tools and stop sequences are ordered).
 */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const o = v as Record<string, unknown>;
    // No prototype: a `__proto__` field is kept as a field, not taken as the object's prototype.
    const sorted = Object.create(null) as Record<string, unknown>;
    for (const k of Object.keys(o).sort()) sorted[k] = o[k];
    return sorted;
  });
}

/**
 * The exact-match response cache (`ai.cache`, docs/ai.md#response-cache) in the shared store.
 * Entries are keyed by a SHA-256 of the scope and the normalised request, so a key never shows
 * a prompt; the entry holds the answer and its usage only. Scope: `user` serves an entry only to
 * the same signed-in user, `key` only through the same API key (the same user without one),
 * `global` to anyone; a call with nothing to scope by (anonymous under `user`) is not cached.
 * Bounded per entry (`maxEntryBytes`) and in total (`maxTotalBytes`: bytes written per TTL-long
 * bucket, the current and the previous one counted, an upper bound of what is alive). A store
 * failure never fails a call: it is then a miss, and nothing is stored.
 */
export class ResponseCache {
  /** This instance's lookups since start, and what the hits saved (console). */
  private readonly counts = { hits: 0, misses: 0, tokensSaved: 0, usdSaved: 0 };

  constructor(
    readonly config: ResponseCacheConfig,
    private readonly store: Storage,
    private readonly logger: Logger,
    private readonly metrics?: Metrics,
  ) {}

  /** The entry key of a request for this caller, or undefined when it is not to be cached. */
  keyFor(req: CacheRequest, identity: Identity | null, directive: CacheDirective | undefined): string | undefined {
    if (!this.config.enabled || directive === 'off') return undefined;
    if (directive === undefined && this.config.perRequest === 'opt-in') return undefined;
    const scope =
      this.config.scope === 'global'
        ? 'global'
        : this.config.scope === 'key' && identity?.apiKey
          ? `key:${identity.apiKey.id}`
          : identity
            ? `user:${identity.sub}`
            : undefined;
    if (!scope) return undefined;
    const hash = createHash('sha256')
      .update(
        canonicalJson([
          scope,
          req.model,
          req.content ?? null,
          req.systemPrompt ?? null,
          req.systemPromptText ?? null,
          req.messages ?? null,
          req.tools ?? null,
          req.toolChoice ?? null,
          req.output ?? null,
          req.maxTokens,
          req.temperature ?? null,
          req.wire ?? null,
          req.sampling ?? null,
        ]),
      )
      .digest('hex');
    return PREFIX + hash;
  }

  /** The entry under `key`, when there is one and `servable` (this caller may be given it) says yes; counted as a hit or a miss. */
  async get(key: string, servable: (hit: CachedAnswer) => boolean = () => true): Promise<CachedAnswer | undefined> {
    let hit: CachedAnswer | undefined;
    try {
      hit = await this.store.get<CachedAnswer>(key);
    } catch (err) {
      this.logger.warn('ai: response cache unreadable; answering from the upstream', {
        error: err instanceof Error ? err.message : String(err),
      });
    }
    if (hit && !servable(hit)) hit = undefined;
    this.metrics?.cacheLookup(hit ? 'hit' : 'miss');
    if (hit) {
      this.counts.hits++;
      this.counts.tokensSaved += Math.max(0, hit.tokensUsed - Math.ceil(hit.tokensUsed * this.config.chargeRatio));
      this.counts.usdSaved += (hit.costUsd ?? 0) * (1 - this.config.chargeRatio);
    } else this.counts.misses++;
    return hit;
  }

  /** Hit rate and what hits saved on this instance since start (tokens and USD not charged). */
  figures(): { hits: number; misses: number; hitRate: number | null; tokensSaved: number; usdSaved: number } {
    const { hits, misses, tokensSaved, usdSaved } = this.counts;
    return {
      hits,
      misses,
      hitRate: hits + misses ? hits / (hits + misses) : null,
      tokensSaved,
      usdSaved: Math.round(usdSaved * 1e6) / 1e6,
    };
  }

  /** Store an answer (best effort): refused past the entry or total size. */
  async put(key: string, answer: CachedAnswer): Promise<void> {
    const bytes = Buffer.byteLength(JSON.stringify(answer), 'utf8');
    if (bytes > this.config.maxEntryBytes) return;
    const ttlMs = this.config.ttlSec * 1000;
    const bucket = Math.floor(Date.now() / ttlMs);
    try {
      const [prev] = await this.store.getMany<number>([`${PREFIX}bytes:${bucket - 1}`]);
      const now = await this.store.increment(`${PREFIX}bytes:${bucket}`, bytes, { ttlMs: 2 * ttlMs });
      if ((now ?? 0) + (prev ?? 0) > this.config.maxTotalBytes) {
        await this.store.increment(`${PREFIX}bytes:${bucket}`, -bytes, { min: 0 });
        this.logger.debug('ai: response not cached: ai.cache.maxTotalBytes reached', { bytes, maxTotalBytes: this.config.maxTotalBytes });
        return;
      }
      await this.store.set(key, answer, { ttlMs });
    } catch (err) {
      this.logger.warn('ai: response not cached (store unavailable)', { error: err instanceof Error ? err.message : String(err) });
    }
  }

  /** Empty the cache (admin.clearCache 'responses'); the number of entries removed. */
  async clear(): Promise<number> {
    // A page at a time, its deletes together: a cache of a million entries is a pass over its own
    // keys (an index on every store, Redis included), never the whole store, nor a million round
    // trips one after another.
    let removed = 0;
    let cursor: string | undefined;
    do {
      const page = await this.store.listKeys(PREFIX, { cursor, limit: CLEAR_PAGE });
      const gone = await Promise.all(page.keys.map((k) => this.store.delete(k)));
      removed += page.keys.filter((k, i) => gone[i] && !k.startsWith(`${PREFIX}bytes:`)).length;
      cursor = page.cursor;
    } while (cursor !== undefined);
    return removed;
  }
}
