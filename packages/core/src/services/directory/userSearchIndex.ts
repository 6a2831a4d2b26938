import type { Storage } from '../../kernel/Storage.js';

/**
 * The index behind user search: an append-only log of (id, e-mail), one entry per user and
 * per e-mail change, newest last. A search reads it newest first in pages, so its cost is
 * bounded by the entries it may examine (never by any ledger, and never a keyspace scan, which
 * on Redis would walk every key of the cluster). A marker per user remembers what was indexed,
 * so an unchanged user is never appended twice, whichever instance saw them.
 */
const LOG = 'user:directory';
const markerKey = (sub: string) => `user:indexed:${sub}`;
/** Entries per read of the log. */
const PAGE = 500;

export interface IndexEntry {
  sub: string;
  /** Lower case; absent when the identity carried none. */
  email?: string;
}

/** Index a user (or their new e-mail): one read when nothing changed, else a set-if-unchanged and one append. */
export async function indexUser(storage: Storage, sub: string, email: string | undefined): Promise<void> {
  const normalized = email?.trim().toLowerCase() ?? '';
  const indexed = await storage.get<string>(markerKey(sub));
  if (indexed === normalized) return;
  // Of two instances indexing the same change at once, one wins the marker and appends.
  if (!(await storage.compareAndSet<string>(markerKey(sub), indexed, normalized))) return;
  try {
    await storage.append<IndexEntry>(LOG, { sub, ...(normalized ? { email: normalized } : {}) });
  } catch (err) {
    // Give the marker back, or the user would never be indexed: every later sighting would read
    // it as done. (Absent before: deleted; a racing change lost so is indexed again, at worst twice.)
    const undo =
      indexed === undefined ? storage.delete(markerKey(sub)) : storage.compareAndSet<string>(markerKey(sub), normalized, indexed);
    await undo.catch(() => undefined);
    throw err;
  }
}

export interface SearchOptions {
  /** Most matches returned. */
  limit: number;
  /** Continue below this log position (a previous answer's nextCursor). */
  cursor?: number | undefined;
  /** Most index entries examined per search: the bound on its cost. */
  maxScanned: number;
}

export interface SearchPage {
  /** Matching ids, most recently indexed first, each once per page. */
  subs: string[];
  /** Where to continue when the index holds older entries not yet examined. */
  nextCursor?: number;
  /** Entries examined. */
  scanned: number;
}

/** Users whose id or e-mail contains `query` (case-insensitive), newest index entries first. */
export async function searchIndex(storage: Storage, query: string, opts: SearchOptions): Promise<SearchPage> {
  const q = query.trim().toLowerCase();
  const subs: string[] = [];
  const seen = new Set<string>();
  let before = opts.cursor;
  let scanned = 0;
  let last: number | undefined;
  while (subs.length < opts.limit && scanned < opts.maxScanned) {
    const page = await storage.readLog<IndexEntry>(LOG, {
      newestFirst: true,
      limit: Math.min(PAGE, opts.maxScanned - scanned),
      ...(before !== undefined ? { before } : {}),
    });
    if (page.length === 0) return { subs, scanned };
    for (const { seq, record } of page) {
      scanned++;
      last = seq;
      if (!seen.has(record.sub) && (record.sub.toLowerCase().includes(q) || (record.email?.includes(q) ?? false))) subs.push(record.sub);
      seen.add(record.sub);
      if (subs.length >= opts.limit) break;
    }
    before = last;
  }
  return { subs, scanned, ...(last !== undefined && last > 1 ? { nextCursor: last } : {}) };
}
