import { existsSync, readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { CoreError } from '../../kernel/CoreError.js';

/** Names the retired journal file store (0.1) wrote in its data directory. */
const RETIRED = /^(journal\.\d+\.log|snapshot)$/;

/**
 * Refuse to start a new SQLite database beside the data of the retired journal store.
 *
 * 0.1's `storage.type: 'file'` kept balances, ledgers and keys in `journal.<n>.log` and `snapshot`.
 * This version does not read them, so opening a fresh database there would look like every balance
 * had vanished. Once the SQLite file exists (the operator moved on deliberately), the old files
 * are left alone.
 */
export function refuseRetiredJournalStore(file: string): void {
  if (existsSync(file)) return;
  const dir = dirname(file);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return; // no directory yet: nothing retired in it
  }
  const found = names.filter((n) => RETIRED.test(n)).sort();
  if (found.length === 0) return;
  throw new CoreError(
    'CONFLICT',
    `storage: ${dir} holds data of the retired journal file store (${found.join(', ')}), which this version does not read. ` +
      'Starting would create an empty SQLite database beside it. Move those files out of the data directory (to start empty), ' +
      'or choose another storage.dir or storage.sqlite.file; see docs/storage.md ("Upgrading from the journal store").',
  );
}
