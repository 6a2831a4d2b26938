import { randomUUID } from 'node:crypto';

/**
 * A call's request id: a UUID version 7 (RFC 9562), its first 48 bits the time in milliseconds,
 * the rest random (74 bits, from Node's buffered `randomUUID`).
 *
 * Why not a random UUID: stores keep rows keyed by the request id (a call's hold and its finished
 * record, `holddone:<user>:<id>`, kept seven days; the BYOK usage claim). Random ids put each
 * call's row at a random place among a user's older ones, so every call read and wrote a b-tree
 * leaf of its own, mostly one SQLite's page cache no longer held (a read from the file, and a
 * page of its own in the WAL at the commit), and split leaves all over the range. Ids in time
 * order put the calls of a minute side by side on the range's last leaf.
 */
export function requestIdV7(now: number = Date.now()): string {
  const time = now.toString(16).padStart(12, '0');
  // randomUUID: xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx; keep from the version digit's next one on.
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${randomUUID().slice(15)}`;
}
