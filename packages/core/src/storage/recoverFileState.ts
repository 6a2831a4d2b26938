import { readdir, readFile, unlink } from 'node:fs/promises';
import { CoreError } from '../errors/index.js';
import { applyRecord, asRecord, emptyState, type FileState } from './fileRecords.js';
import { readSnapshot } from './fileSnapshot.js';
import { journalPath, syncDir } from './Journal.js';
import { parseLines } from './journalFormat.js';

export interface RecoveredState {
  state: FileState;
  /** Highest record number seen; the next write uses lastN + 1. */
  lastN: number;
  /** Generation of the journal to continue appending to. */
  gen: number;
  /** Length of its valid prefix (a torn tail beyond it is cut off before appending). */
  journalLength: number;
  snapshotBytes: number;
  /** Bytes of a torn last record that were dropped, and why. */
  dropped: { bytes: number; problem?: string };
}

/**
 * Rebuild the state: the snapshot, then every journal of its generation or later, in order,
 * skipping records the snapshot already covers. Only the last journal may end in a torn record
 * (batches are written one after another, and a journal is complete before the next one
 * starts); it is dropped. A bad record anywhere else is corruption and opening is refused.
 */
export async function recoverFileState(dir: string, now = Date.now()): Promise<RecoveredState> {
  const snapshot = await readSnapshot(dir, now);
  const state = snapshot?.state ?? emptyState();
  const snapGen = snapshot?.gen ?? 0;
  const snapN = snapshot?.n ?? 0;
  let lastN = snapN;

  const gens: number[] = [];
  const obsolete: number[] = [];
  for (const name of await readdir(dir)) {
    const m = /^journal\.(\d+)\.log$/.exec(name);
    if (!m) continue;
    const gen = Number(m[1]);
    (gen >= snapGen ? gens : obsolete).push(gen);
  }
  gens.sort((a, b) => a - b);

  let journalLength = 0;
  const dropped: RecoveredState['dropped'] = { bytes: 0 };
  for (const [i, gen] of gens.entries()) {
    const path = journalPath(dir, gen);
    const buf = await readFile(path);
    const parsed = parseLines(buf);
    const isLast = i === gens.length - 1;
    if (parsed.problem && !isLast) {
      throw new CoreError('INTERNAL', `file storage journal ${path} is corrupt (${parsed.problem}); restore it from a backup`);
    }
    for (const [j, raw] of parsed.records.entries()) {
      const rec = asRecord(raw);
      if (!rec || rec.o === 'h' || rec.o === 'f' || rec.o === 'A' || rec.n === undefined) {
        throw new CoreError('INTERNAL', `file storage journal ${path} is corrupt (bad record ${j}); restore it from a backup`);
      }
      if (rec.n <= snapN) continue;
      applyRecord(state, rec, now);
      lastN = Math.max(lastN, rec.n);
    }
    if (isLast) {
      journalLength = parsed.validLength;
      dropped.bytes = buf.length - parsed.validLength;
      if (parsed.problem) dropped.problem = parsed.problem;
    }
  }

  // Journals the snapshot fully covers: left over when a crash hit after the snapshot was installed.
  for (const gen of obsolete) await unlink(journalPath(dir, gen));
  if (obsolete.length) await syncDir(dir);

  return {
    state,
    lastN,
    gen: gens.length ? (gens[gens.length - 1] as number) : snapGen,
    journalLength,
    snapshotBytes: snapshot?.bytes ?? 0,
    dropped,
  };
}
