import type { ResolvedConfig } from '@ai-backend/core';
import type { SessionCounts } from './clusterSessionCounts.js';

type Budgets = ResolvedConfig['mcp']['budgets'];

/** What the handler knows of one open session, for the budget. */
export interface BudgetedSession {
  ip: string;
  /** Identity that owns the session; null while anonymous. */
  owner: string | null;
  /** notifications/initialized arrived. */
  initialized: boolean;
  createdAt: number;
  lastSeen: number;
}

/** Why a new session is refused: HTTP status and message for the JSON-RPC error. */
export interface BudgetRefusal {
  status: 429 | 503;
  message: string;
  retryAfterSec: number;
}

/**
 * Session budgets of /mcp (`mcp.budgets`), kept apart from the handler so the limits read in
 * one place: anonymous sessions per client address, sessions per identity, a separate ceiling for anonymous
 * sessions (the rest of `maxSessions` stays for signed-in clients), and short lifetimes for
 * sessions that never finish initializing or stay anonymous and idle.
 */
export class SessionBudget {
  private readonly byAddress = new Map<string, number>();
  private readonly byIdentity = new Map<string, number>();
  private anonymous = 0;
  private identified = 0;

  constructor(
    readonly budgets: Budgets,
    /** The overall session cap. */
    readonly maxSessions: number,
    /** Sessions other instances hold (ClusterSessionCounts), so the budget is the cluster's, not one process's. */
    private readonly elsewhere: () => SessionCounts | undefined = () => undefined,
    /** Told after every change of this instance's counts (to publish them to the others at once). */
    private readonly changed: () => void = () => undefined,
  ) {}

  /** May a client at `ip` (signed in as `owner`, or anonymous) open one more session, with `open` sessions now? */
  admit(ip: string, owner: string | null, open: number): BudgetRefusal | null {
    const b = this.budgets;
    const other = this.elsewhere();
    // Per address counts anonymous sessions only: a signed-in client behind the same NAT as a
    // flooding one is budgeted by its identity instead, and keeps being served.
    if (owner === null && (this.byAddress.get(ip) ?? 0) + (other?.byAddress[ip] ?? 0) >= b.sessionsPerAddress) {
      return {
        status: 429,
        message: `too many sessions from this address (${b.sessionsPerAddress}); close some or retry later`,
        retryAfterSec: 30,
      };
    }
    if (owner !== null && (this.byIdentity.get(owner) ?? 0) + (other?.byIdentity[owner] ?? 0) >= b.sessionsPerIdentity) {
      return {
        status: 429,
        message: `too many sessions for this identity (${b.sessionsPerIdentity}); close some or retry later`,
        retryAfterSec: 30,
      };
    }
    if (owner === null && this.anonymous + (other?.anonymous ?? 0) >= Math.min(b.maxAnonymousSessions, this.maxSessions)) {
      return { status: 503, message: 'too many anonymous sessions; sign in or retry later', retryAfterSec: 30 };
    }
    if (open + (other?.total ?? 0) >= this.maxSessions) return { status: 503, message: 'too many sessions', retryAfterSec: 30 };
    return null;
  }

  /** Has `owner` as many sessions as its budget allows (here and on the other instances)? */
  identityFull(owner: string): boolean {
    return (this.byIdentity.get(owner) ?? 0) + (this.elsewhere()?.byIdentity[owner] ?? 0) >= this.budgets.sessionsPerIdentity;
  }

  add(s: Pick<BudgetedSession, 'ip' | 'owner'>): void {
    if (s.owner === null) {
      this.anonymous++;
      this.byAddress.set(s.ip, (this.byAddress.get(s.ip) ?? 0) + 1);
    } else {
      this.identified++;
      this.byIdentity.set(s.owner, (this.byIdentity.get(s.owner) ?? 0) + 1);
    }
    this.changed();
  }

  remove(s: Pick<BudgetedSession, 'ip' | 'owner'>): void {
    if (s.owner === null) {
      this.anonymous--;
      dec(this.byAddress, s.ip);
    } else {
      this.identified--;
      dec(this.byIdentity, s.owner);
    }
    this.changed();
  }

  /** An anonymous session (opened from `ip`) was claimed by the identity that first used it. */
  claimed(ip: string, owner: string): void {
    this.anonymous--;
    dec(this.byAddress, ip);
    this.identified++;
    this.byIdentity.set(owner, (this.byIdentity.get(owner) ?? 0) + 1);
    this.changed();
  }

  /** This instance's sessions, as other instances add them to theirs. */
  own(): SessionCounts {
    return {
      total: this.anonymous + this.identified,
      anonymous: this.anonymous,
      byAddress: Object.fromEntries(this.byAddress),
      byIdentity: Object.fromEntries(this.byIdentity),
    };
  }

  /** Should this session be closed now (never initialized in time, or anonymous and idle)? */
  expired(s: BudgetedSession, now: number): boolean {
    if (!s.initialized && now - s.createdAt > this.budgets.uninitializedTtlMs) return true;
    return s.owner === null && now - s.lastSeen > this.budgets.anonymousIdleMs;
  }

  /** How often to look for expired sessions. */
  get sweepEveryMs(): number {
    return Math.max(250, Math.min(this.budgets.uninitializedTtlMs, this.budgets.anonymousIdleMs, 60_000) / 4);
  }

  get counts(): { anonymous: number; addresses: number; identities: number } {
    return { anonymous: this.anonymous, addresses: this.byAddress.size, identities: this.byIdentity.size };
  }
}

function dec(map: Map<string, number>, key: string): void {
  const n = (map.get(key) ?? 0) - 1;
  if (n > 0) map.set(key, n);
  else map.delete(key);
}
