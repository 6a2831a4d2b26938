import type { ResolvedConfig } from '../../config/schema.js';
import type { Storage } from '../../kernel/Storage.js';
import type { Identity } from '../../kernel/identity.js';
import { rememberUser, userByEmail } from './userIndex.js';
import { AgedMap } from '../../lib/AgedMap.js';
import { InFlight } from '../../lib/InFlight.js';
import { indexUser, searchIndex, type SearchPage } from './userSearchIndex.js';

/** What the server last saw of a user's identity, as stored. */
export interface UserProfile {
  sub: string;
  email?: string;
  /** The issuer vouched for `email`: only then may `admin.users` name this user by it (an API key's administrator check reads it). */
  emailVerified?: boolean;
  scopes: string[];
  /** As computed by the auth layer at that time: the same value the access rules used. */
  isAdmin: boolean;
  via: Identity['via'];
  lastSeenAt: string;
}

/** One user's profile writes (UserDirectory.queues): the newest waiting for the one running. */
interface WriteQueue {
  next: (() => Promise<void>) | undefined;
}

/** A profile is rewritten at most this often per user and instance, unless it changed. */
const REFRESH_MS = 10 * 60_000;
/** Bound on the in-memory "recently written" map. */
const MAX_TRACKED = 10_000;

export const profileKey = (sub: string) => `user:profile:${sub}`;

/**
 * Who has called this server, for admin.getUserInfo: each authenticated caller's sub, e-mail,
 * scopes and administrator flag as the auth layer established them, kept in the store (so every
 * instance answers alike) and written off the request path at most every 10 minutes per user.
 */
export class UserDirectory {
  // Only the last REFRESH_MS count: older marks are dropped instead of waiting for the ceiling.
  private readonly written = new AgedMap<string, string>(REFRESH_MS, MAX_TRACKED);
  /** Writes still running: a shutdown waits for them before the store closes (see settled). */
  private readonly writing = new InFlight();
  /**
   * Per user while a write runs: the newest profile waiting for it. A user's writes run one after
   * another, so the newest profile lands last (side by side, an older write that was slow, a pool's
   * connect or a retried failure, could land after a newer one and stand for REFRESH_MS, since the
   * newer one's mark keeps it from being written again: an e-mail no longer verified would still
   * name an administrator through the stored profile, listedAdmin). At most one waits: a newer
   * sighting replaces it, so a user whose identity changes on every call (two tokens with
   * different scopes) queues nothing however slow the store.
   */
  private readonly queues = new Map<string, WriteQueue>();

  constructor(
    private readonly storage: Storage,
    private readonly config: ResolvedConfig,
  ) {}

  /** Note a caller (fire and forget: a failed write never fails the call). */
  seen(identity: Identity): void {
    // An API key carries its own narrower scopes: the owner's profile comes from their own sign-ins.
    if (identity.via === 'apiKey') return;
    const fingerprint = `${identity.email ?? ''}|${identity.emailVerified === true}|${identity.isAdmin}|${identity.scopes.join(' ')}`;
    const now = Date.now();
    if (this.written.get(identity.sub, now) === fingerprint) return;
    this.written.set(identity.sub, fingerprint, now);
    const profile: UserProfile = {
      sub: identity.sub,
      scopes: [...identity.scopes],
      isAdmin: identity.isAdmin,
      via: identity.via,
      lastSeenAt: new Date(now).toISOString(),
      ...(identity.email ? { email: identity.email } : {}),
      ...(identity.emailVerified ? { emailVerified: true } : {}),
    };
    const sub = identity.sub;
    const run = () =>
      Promise.all([
        this.storage.set(profileKey(sub), profile),
        rememberUser(this.storage, identity),
        indexUser(this.storage, sub, identity.email),
      ]).then(
        () => undefined,
        // Failed: the next sighting writes again, unless a newer one already did or will.
        () => {
          if (this.written.get(sub, Date.now()) === fingerprint) this.written.delete(sub);
        },
      );
    const queue = this.queues.get(sub);
    if (queue) {
      queue.next = run;
      return;
    }
    const mine: WriteQueue = { next: run };
    this.queues.set(sub, mine);
    const drain = async () => {
      try {
        for (let next = mine.next; next; next = mine.next) {
          mine.next = undefined;
          await next();
        }
      } finally {
        this.queues.delete(sub);
      }
    };
    this.writing.track(drain());
  }

  /**
   * Resolves when every profile write started so far has ended (each never rejects). The runtime
   * waits for it before closing the store, so a user first seen just before a shutdown is kept
   * rather than cut off by "storage is closed".
   */
  settled(): Promise<void> {
    return this.writing.settled();
  }

  /** A user by sub or e-mail (case-insensitive); undefined when the server never saw them. */
  async find(userIdOrEmail: string): Promise<{ sub: string; profile: UserProfile | undefined }> {
    const sub = userIdOrEmail.includes('@') ? ((await userByEmail(this.storage, userIdOrEmail)) ?? userIdOrEmail) : userIdOrEmail;
    return { sub, profile: await this.storage.get<UserProfile>(profileKey(sub)) };
  }

  /**
   * Seen users whose id or e-mail contains `query`, ignoring case: at most `limit` per page, most
   * recently indexed first, examining at most `maxScanned` index entries (pass `nextCursor` back
   * to go on). Each match is checked against the user's current profile, so an e-mail they no
   * longer use does not find them.
   */
  async search(
    query: string,
    opts: { limit: number; cursor?: number | undefined; maxScanned: number },
  ): Promise<SearchPage & { profiles: UserProfile[] }> {
    const page = await searchIndex(this.storage, query, opts);
    const q = query.trim().toLowerCase();
    const stored = await this.storage.getMany<UserProfile>(page.subs.map(profileKey));
    const profiles = stored.filter(
      (p): p is UserProfile => p !== undefined && (p.sub.toLowerCase().includes(q) || (p.email?.toLowerCase().includes(q) ?? false)),
    );
    return { ...page, subs: profiles.map((p) => p.sub), profiles };
  }

  /** Listed in `admin.users` by sub or e-mail: an administrator whatever their token says. */
  listedAdmin(sub: string, email: string | undefined): boolean {
    const users = this.config.admin.users;
    if (users.includes(sub)) return true;
    const e = email?.toLowerCase();
    return e !== undefined && users.some((u) => u.toLowerCase() === e);
  }
}
