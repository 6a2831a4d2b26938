/** One finished procedure call as the console's Live view shows it: no input, no output text, no secret. */
export interface RecentCall {
  /** Increasing per instance: a poller asks for calls after the last one it saw. */
  seq: number;
  /** ISO time the call ended. */
  at: string;
  /** Entry point: trpc, rpc, mcp, openai, internal. */
  entry: string;
  procedure: string;
  /** The caller's stored id, or null when anonymous (never a token or key). */
  identity: string | null;
  /** How the caller authenticated (jwt, oauth, apiKey), when known. */
  via: string | null;
  /** 'ok' or the tRPC error code. */
  status: string;
  latencyMs: number;
  /** Tokens the call reported (AI calls that answered at once), else null. */
  tokens: number | null;
}

/** Calls kept by default: enough for a screen of recent activity, bounded memory (~200 B each). */
export const RECENT_CALLS_KEPT = 500;

/**
 * The most recent procedure calls on this instance, in a ring buffer (memory bounded, nothing
 * stored). Read by admin.recentCalls; what it keeps is chosen so that showing it leaks nothing
 * a call carried: no input, no prompt, no answer text, no credential.
 */
/** As kept: the time as epoch ms (the ISO string is made only when someone reads the list). */
type Kept = Omit<RecentCall, 'at'> & { atMs: number };

export class RecentCalls {
  private readonly ring: Kept[] = [];
  private next = 0;
  private seq = 0;

  constructor(private readonly size = RECENT_CALLS_KEPT) {}

  /** Record a finished call (on every call's path: no formatting here). */
  push(call: Omit<Kept, 'seq'>): void {
    const item: Kept = { seq: ++this.seq, ...call };
    if (this.ring.length < this.size) this.ring.push(item);
    else this.ring[this.next] = item;
    this.next = (this.next + 1) % this.size;
  }

  /** Newest first, at most `limit`, only those after `afterSeq` when given. */
  list(limit: number, afterSeq = 0): RecentCall[] {
    const out: RecentCall[] = [];
    for (let i = 1; i <= this.ring.length && out.length < limit; i++) {
      const item = this.ring[(this.next - i + this.ring.length * 2) % this.ring.length]!;
      if (item.seq <= afterSeq) break;
      const { atMs, ...rest } = item;
      out.push({ ...rest, at: new Date(atMs).toISOString() });
    }
    return out;
  }

  get lastSeq(): number {
    return this.seq;
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
