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
 * The MCP session budget across instances: each instance publishes its own session counts to the
 * shared store (`mcpbudget:<instance>`, refreshed every second, expiring after five) and keeps the
 * other instances' counts, read on the same beat, to add to its own when it admits a session.
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
        const keys = (await this.storage.keys(PREFIX)).filter((k) => k !== PREFIX + this.instanceId);
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
