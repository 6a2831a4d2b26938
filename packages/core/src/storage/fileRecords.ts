/**
 * The records of the file backend's journal and snapshot, and how they change the state.
 *
 * Journal records carry `n`, a sequence number increasing across the whole store; a snapshot
 * covers every record up to its `n`, so replay skips those (a record can be in both when it was
 * written to the new journal while the snapshot was being taken). Increments and
 * compare-and-set are journaled as plain sets of their result, so replay is deterministic.
 */

/** A stored value: canonical JSON text and absolute expiry (ms since epoch). Never mutated in place. */
export interface Slot {
  readonly json: string;
  readonly expiresAt: number | undefined;
}

export interface FileState {
  kv: Map<string, Slot>;
  /** Log records as JSON text; the array index + 1 is the sequence number. */
  logs: Map<string, string[]>;
}

export type FileRecord =
  | { n?: number; o: 's'; k: string; v: unknown; e?: number }
  | { n?: number; o: 'd'; k: string }
  | { n?: number; o: 'a'; l: string; r: unknown }
  /** Several records of one log (snapshots). */
  | { o: 'A'; l: string; r: unknown[] }
  /** Snapshot header and footer. */
  | { o: 'h'; version: number; gen: number; n: number }
  | { o: 'f'; records: number };

const key = (k: string): string => JSON.stringify(k);

export function encodeSet(n: number, k: string, json: string, expiresAt: number | undefined): string {
  return `{"n":${n},"o":"s","k":${key(k)}${expiresAt === undefined ? '' : `,"e":${expiresAt}`},"v":${json}}`;
}

export function encodeDelete(n: number, k: string): string {
  return `{"n":${n},"o":"d","k":${key(k)}}`;
}

export function encodeAppend(n: number, log: string, json: string): string {
  return `{"n":${n},"o":"a","l":${key(log)},"r":${json}}`;
}

export function encodeLogChunk(log: string, jsons: string[]): string {
  return `{"o":"A","l":${key(log)},"r":[${jsons.join(',')}]}`;
}

export function emptyState(): FileState {
  return { kv: new Map(), logs: new Map() };
}

/** Check the shape of a parsed line; anything else is corruption. */
export function asRecord(value: unknown): FileRecord | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const r = value as Record<string, unknown>;
  if (r.n !== undefined && typeof r.n !== 'number') return undefined;
  switch (r.o) {
    case 's':
      return typeof r.k === 'string' && 'v' in r && (r.e === undefined || typeof r.e === 'number') ? (r as FileRecord) : undefined;
    case 'd':
      return typeof r.k === 'string' ? (r as FileRecord) : undefined;
    case 'a':
      return typeof r.l === 'string' && 'r' in r ? (r as FileRecord) : undefined;
    case 'A':
      return typeof r.l === 'string' && Array.isArray(r.r) ? (r as FileRecord) : undefined;
    case 'h':
      return typeof r.gen === 'number' && typeof r.n === 'number' ? (r as FileRecord) : undefined;
    case 'f':
      return typeof r.records === 'number' ? (r as FileRecord) : undefined;
    default:
      return undefined;
  }
}

/** Apply a data record (s, d, a, A) to the state. */
export function applyRecord(state: FileState, rec: FileRecord, now: number): void {
  switch (rec.o) {
    case 's':
      // A set that has expired since still replaces what was before it: the key is gone.
      if (rec.e !== undefined && rec.e <= now) state.kv.delete(rec.k);
      else state.kv.set(rec.k, { json: JSON.stringify(rec.v), expiresAt: rec.e });
      return;
    case 'd':
      state.kv.delete(rec.k);
      return;
    case 'a':
    case 'A': {
      let entries = state.logs.get(rec.l);
      if (!entries) state.logs.set(rec.l, (entries = []));
      if (rec.o === 'a') entries.push(JSON.stringify(rec.r));
      else for (const r of rec.r) entries.push(JSON.stringify(r));
      return;
    }
    default:
      return;
  }
}
