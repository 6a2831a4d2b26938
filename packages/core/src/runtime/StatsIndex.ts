import type { Storage } from '../kernel/Storage.js';
import { FAMILY_LISTED } from '../kernel/ownerListings.js';

const PREFIX = FAMILY_LISTED.stats;
/** Per UTC day, the names (`<entry>:<procedure>`) that have a record that day. */
const NAMES = 'stats:names:';
/** When the index began, and whether records written before it (older versions) may exist. */
const MARKER = 'stats:index';
/** How long this instance trusts that a name is in its day's list without checking again in a flush. */
const KNOWN_MS = 60_000;
const DAY_MS = 86_400_000;

interface Marker {
  /** The UTC day the first indexing instance started. */
  since: string;
  /** Records existed then: days up to `since` are listed by key, not by the index. */
  legacy: boolean;
}

/**
 * Which statistics records exist, per UTC day, so a read fetches a period's records by key instead
 * of listing keys: a key listing is a range read on SQL but a SCAN of the whole keyspace on Redis
 * (and of every key in memory), which grows with everything stored, ledgers' idempotency claims
 * included. A flush adds a record's name to its day's list in the transaction that writes the
 * record, the first time this instance writes that name (and again every minute, so a list cleared
 * on another instance is rebuilt).
 */
export class StatsIndex {
  /** Names this instance put in a day's list, and when (only today's and yesterday's are kept). */
  private known = new Map<string, Map<string, number>>();
  private marker: Promise<void> | undefined;

  constructor(
    private readonly storage: Storage,
    private readonly now: () => number,
  ) {}

  static readonly markerKey = MARKER;

  /** The day list to update with a record of `name` on `day`, or undefined when this instance put it there recently. */
  listFor(day: string, name: string): string | undefined {
    const at = this.known.get(day)?.get(name);
    return at !== undefined && this.now() - at < KNOWN_MS ? undefined : NAMES + day;
  }

  /** The list's value after adding `name` (undefined: already in it). */
  static added(list: string[] | undefined, name: string): string[] | undefined {
    return list?.includes(name) ? undefined : [...(list ?? []), name];
  }

  remember(day: string, name: string): void {
    let names = this.known.get(day);
    if (!names) {
      // A new day: only the previous one can still get records (a flush across midnight).
      for (const d of this.known.keys()) if (d < day && this.known.size >= 2) this.known.delete(d);
      this.known.set(day, (names = new Map()));
    }
    names.set(name, this.now());
  }

  /** Forget what this instance put in the lists (they were cleared; the marker stays). */
  forget(): void {
    this.known = new Map();
  }

  /**
   * Once per instance: record when indexing began (kept by a clear, which removes every record). The first instance to do
   * so lists the stored records once to tell whether any predate the index.
   */
  ensureMarker(): Promise<void> {
    this.marker ??= (async () => {
      if (await this.storage.get<Marker>(MARKER)) return;
      const legacy = (await this.storage.keys(PREFIX)).some((k) => /^stats:\d{4}-\d\d-\d\d:/.test(k));
      await this.storage.compareAndSet<Marker>(MARKER, undefined, { since: new Date(this.now()).toISOString().slice(0, 10), legacy });
    })().catch((err: unknown) => {
      this.marker = undefined;
      throw err;
    });
    return this.marker;
  }

  /**
   * The record keys (without `stats:`) of `days`: from the day lists, plus, for days the index may
   * not cover (records of an older version, or no marker yet), a listing of the records' keys.
   */
  async recordKeys(days: readonly string[], retentionDays: number): Promise<string[]> {
    const [marker, ...lists] = await this.storage.getMany<unknown>([MARKER, ...days.map((d) => NAMES + d)]);
    const keys = new Set<string>();
    days.forEach((day, i) => {
      for (const name of (lists[i] as string[] | undefined) ?? []) keys.add(`${day}:${name}`);
    });
    const m = marker as Marker | undefined;
    // Legacy records expire after the retention: past it, the index covers everything.
    const legacyUntil = m ? new Date(Date.parse(`${m.since}T00:00:00Z`) + retentionDays * DAY_MS).toISOString().slice(0, 10) : '';
    const today = new Date(this.now()).toISOString().slice(0, 10);
    const unindexed = new Set(days.filter((d) => !m || (m.legacy && d <= m.since && today <= legacyUntil)));
    // One range of the key index per day not covered (`stats:<day>:`), never the whole `stats:`
    // prefix: its cost is that day's records, not every record of the retention period.
    for (const listed of await Promise.all([...unindexed].map((day) => this.storage.keys(`${PREFIX}${day}:`)))) {
      for (const k of listed) keys.add(k.slice(PREFIX.length));
    }
    return [...keys];
  }
}
