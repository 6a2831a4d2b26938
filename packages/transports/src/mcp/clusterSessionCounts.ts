import { randomUUID } from 'node:crypto';
import type { Storage } from '@ai-backend/core';

/** One instance's open sessions, as the budget counts them. */
export interface SessionCounts {
  total: number;
  anonymous: number;
  /** Anonymous sessions per client address. */
  byAddress: Record<string, number>;
  /** Sessions per identity. */
  byIdentity: Record<string, number>;
}

const PREFIX = 'mcpbudget:';
/** How often each instance publishes its counts and reads the others'. */
export const CLUSTER_SYNC_MS = 1_000;
/** A published count lives this long without a refresh: a killed instance's sessions stop counting after it. */
const TTL_MS = 5 * CLUSTER_SYNC_MS;
/**
 * The instances that publish counts, each with when its entry lapses (ms since epoch): read by
 * key instead of listing `mcpbudget:`, a walk of the whole keyspace on Redis.
 */
const MEMBERS = `${PREFIX}members`;
/** How long an instance's entry in MEMBERS lasts; it is renewed when half of it is left. */
const MEMBER_TTL_MS = 60 * CLUSTER_SYNC_MS;
type Members = Record<string, number>;

/**
 * The MCP session budget across instances: each instance publishes its own session counts to the
 * shared store (`mcpbudget:<instance>`, refreshed every second, expiring after five) and keeps the
 * other instances' counts, read on the same beat, to add to its own when it admits a session. The
 * instances are found through one list (`mcpbudget:members`), each entry renewed every 30 s:
 * listing the prefix on every beat and every change walked the whole keyspace on Redis, so the
 * beat grew slower with everything stored (ledgers, usage rows) for as long as the cluster ran.
 *
 * Why a published snapshot rather than shared counters: a counter incremented per session leaks
 * when an instance dies with sessions open (kill -9), and would put a storage round trip in front
 * of every new session (and fail sessions while the store is down). The price: the budget is
 * cluster-wide within one beat (a burst on several instances inside the same second can pass the
 * limit by what the others opened in that second). While the store is down each instance keeps
 * the last counts it read, and they age out with their TTL.
 */
export class ClusterSessionCounts {
  readonly instanceId = randomUUID();
  private others: SessionCounts = empty();
  private readonly timer: NodeJS.Timeout;
  private syncing: Promise<void> | undefined;
  private again: Promise<void> | undefined;

  constructor(
    private readonly storage: Storage,
    private readonly own: () => SessionCounts,
    private readonly onError?: (err: unknown) => void,
  ) {
    this.timer = setInterval(() => void this.sync(), CLUSTER_SYNC_MS).unref();
    this.ready = this.sync();
  }

  /** The first beat (an instance that just started has not read the others' counts before it). */
  readonly ready: Promise<void>;

  /** Sessions the other instances had open at the last beat. */
  get elsewhere(): SessionCounts {
    return this.others;
  }

  /**
   * Publish this instance's counts and read the others' (one beat; also run when this instance's
   * counts change). A sync asked for while one runs runs once more after it, so the last change
   * is always published.
   */
  sync(): Promise<void> {
    if (this.syncing) {
      this.again ??= this.syncing.then(() => {
        this.again = undefined;
        return this.sync();
      });
      return this.again;
    }
    this.syncing = (async () => {
      try {
        await this.storage.set(PREFIX + this.instanceId, this.own(), { ttlMs: TTL_MS });
        const now = Date.now();
        let members = (await this.storage.get<Members>(MEMBERS)) ?? {};
        if (!((members[this.instanceId] ?? 0) > now + MEMBER_TTL_MS / 2)) members = await this.join(now);
        const keys = Object.keys(members)
          .filter((id) => id !== this.instanceId && members[id]! > now)
          .map((id) => PREFIX + id);
        const records = keys.length ? await this.storage.getMany<SessionCounts>(keys) : [];
        const sum = empty();
        for (const r of records) if (r) add(sum, r);
        this.others = sum;
      } catch (err) {
        this.onError?.(err);
      } finally {
        this.syncing = undefined;
      }
    })();
    return this.syncing;
  }

  /** Stop publishing and withdraw this instance's counts. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await (this.again ?? this.syncing);
    await this.storage.delete(PREFIX + this.instanceId).catch(() => undefined);
    await this.members((m) => delete m[this.instanceId], Date.now()).catch(() => undefined);
  }

  /** Enter (or renew) this instance in the member list. */
  private join(now: number): Promise<Members> {
    return this.members((m) => (m[this.instanceId] = now + MEMBER_TTL_MS), now);
  }

  /** Change the member list in one transaction, dropping the entries that lapsed (instances gone without a stop). */
  private members(change: (m: Members) => void, now: number): Promise<Members> {
    return this.storage.transact([MEMBERS], (read) => {
      const next: Members = {};
      for (const [id, until] of Object.entries(read<Members>(MEMBERS) ?? {})) if (until > now) next[id] = until;
      change(next);
      return { writes: [{ op: 'set', key: MEMBERS, value: next }], result: next };
    });
  }
}

function empty(): SessionCounts {
  return { total: 0, anonymous: 0, byAddress: {}, byIdentity: {} };
}

function add(into: SessionCounts, r: SessionCounts): void {
  into.total += r.total ?? 0;
  into.anonymous += r.anonymous ?? 0;
  for (const [k, n] of Object.entries(r.byAddress ?? {})) into.byAddress[k] = (into.byAddress[k] ?? 0) + n;
  for (const [k, n] of Object.entries(r.byIdentity ?? {})) into.byIdentity[k] = (into.byIdentity[k] ?? 0) + n;
}
