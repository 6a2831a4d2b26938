/** One finished procedure call as the console's Live view shows it: no input, no output text, no secret. */
export interface RecentCall {
  /** The call's id on this instance, increasing: a poller merges an updated call by it. */
  seq: number;
  /**
   * When the call was last recorded or updated (a streamed call is recorded when its stream
   * starts and updated when it ends): a poller asks for changes after the `lastSeq` it last saw
   * and gets new calls and updated ones alike.
   */
  rev: number;
  /** ISO time the call ended. */
  at: string;
  /** Entry point: trpc, rpc, mcp, openai, anthropic (the /v1 wire formats), internal. */
  entry: string;
  procedure: string;
  /** The caller's stored id, or null when anonymous (never a token or key). */
  identity: string | null;
  /** How the caller authenticated (jwt, oauth, apiKey), when known. */
  via: string | null;
  /** 'ok' or the tRPC error code. */
  status: string;
  /** Time to the answer; for a stream, to its first event until it ends, then its whole duration. */
  latencyMs: number;
  /** Tokens the call reported (AI answers; a streamed call once its stream finished), else null. */
  tokens: number | null;
  /** A streamed answer still running (its tokens come with its end). */
  streaming?: true;
}

/** Calls kept by default: enough for a screen of recent activity, bounded memory (~200 B each). */
export const RECENT_CALLS_KEPT = 500;

/** As kept: the time as epoch ms (the ISO string is made only when someone reads the list). */
type Kept = Omit<RecentCall, 'at'> & { atMs: number };

/** What a stream's end may change about its call. */
export type RecentCallUpdate = Partial<Pick<RecentCall, 'status' | 'tokens' | 'latencyMs'>> & { streaming?: false };

/**
 * The most recent procedure calls on this instance, in a ring buffer (memory bounded, nothing
 * stored). Read by admin.recentCalls; what it keeps is chosen so that showing it leaks nothing
 * a call carried: no input, no prompt, no answer text, no credential.
 */
export class RecentCalls {
  private readonly ring: Kept[] = [];
  private next = 0;
  private seq = 0;
  /** Changes: a call recorded or updated takes the next number (its `rev`). */
  private revs = 0;

  constructor(private readonly size = RECENT_CALLS_KEPT) {}

  /** Record a finished call, or a stream that started (on every call's path: no formatting here). Returns its seq. */
  push(call: Omit<Kept, 'seq' | 'rev'>): number {
    const seq = ++this.seq;
    const rev = ++this.revs;
    if (this.ring.length < this.size) this.ring.push({ seq, rev, ...call });
    else {
      // The ring is full: the oldest row's object takes the new call (readers get copies, see
      // list), so a call on the hot path leaves no object behind for the garbage collector.
      const item = this.ring[this.next]!;
      item.seq = seq;
      item.rev = rev;
      item.atMs = call.atMs;
      item.entry = call.entry;
      item.procedure = call.procedure;
      item.identity = call.identity;
      item.via = call.via;
      item.status = call.status;
      item.latencyMs = call.latencyMs;
      item.tokens = call.tokens;
      if (call.streaming) item.streaming = true;
      else delete item.streaming;
    }
    this.next = (this.next + 1) % this.size;
    return seq;
  }

  /**
   * A streamed call ended: its tokens (and its status when the stream failed after it started).
   * Nothing happens when the call has left the ring already.
   */
  update(seq: number, change: RecentCallUpdate): void {
    // The ring holds consecutive seqs: the call is `this.seq - seq` places behind the newest.
    const back = this.seq - seq;
    if (back < 0 || back >= this.ring.length) return;
    const item = this.ring[(this.next - 1 - back + this.ring.length * 2) % this.ring.length]!;
    if (item.seq !== seq) return;
    if (change.status !== undefined) item.status = change.status;
    if (change.tokens !== undefined) item.tokens = change.tokens;
    if (change.latencyMs !== undefined) item.latencyMs = change.latencyMs;
    if (change.streaming === false) delete item.streaming;
    item.rev = ++this.revs;
  }

  /**
   * Newest first, at most `limit`; with `afterRev`, only calls recorded or updated after it (a
   * poller passes the `lastSeq` of its previous answer and merges updated calls by `seq`). Reads
   * the whole ring (at most RECENT_CALLS_KEPT items): an updated call may sit behind unchanged ones.
   */
  list(limit: number, afterRev = 0): RecentCall[] {
    const out: RecentCall[] = [];
    for (let i = 1; i <= this.ring.length && out.length < limit; i++) {
      const item = this.ring[(this.next - i + this.ring.length * 2) % this.ring.length]!;
      if (item.rev <= afterRev) continue;
      const { atMs, ...rest } = item;
      out.push({ ...rest, at: new Date(atMs).toISOString() });
    }
    return out;
  }

  /** The last change's number: pass it as `afterRev` to get only what changed since. */
  get lastSeq(): number {
    return this.revs;
  }
}

/**
 * Tokens an AI procedure's answer reports, else null; reads only numbers, never text: `usage` at
 * the top or under `data` (ai.generateText: `data.usage.totalTokens`), or `usageInfo.tokensUsed`.
 */
export function reportedTokens(answer: unknown): number | null {
  const obj = (v: unknown) => (typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : undefined);
  const top = obj(answer);
  if (!top) return null;
  const usage = obj(top.usage) ?? obj(obj(top.data)?.usage);
  const total = usage?.totalTokens ?? usage?.tokensUsed ?? obj(top.usageInfo)?.tokensUsed;
  return typeof total === 'number' && Number.isFinite(total) ? total : null;
}

/**
 * An AI answer served from the response cache (`data.cache: 'hit'`), with the tokens its answer
 * had used when first produced (its `usage`, kept in the entry): undefined for any other answer.
 */
export function cacheHitOf(answer: unknown, tokens: number | null): { tokens: number } | undefined {
  if (typeof answer !== 'object' || answer === null) return undefined;
  const data = (answer as { data?: unknown }).data;
  if (typeof data !== 'object' || data === null || (data as { cache?: unknown }).cache !== 'hit') return undefined;
  return { tokens: tokens ?? 0 };
}
