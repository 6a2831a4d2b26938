import { crc32 as zlibCrc32 } from 'node:zlib';

/**
 * Line framing shared by the file backend's journal and snapshot:
 *
 *     <crc32 of payload, 8 hex digits> <payload JSON>\n
 *
 * A record is valid only when its line is complete and the checksum matches, so a write torn
 * by a crash (partial line, zero-filled tail after power loss) is recognised and dropped.
 */

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[i] = c >>> 0;
  }
  return table;
})();

/** zlib.crc32 exists from Node 20.15; the table version keeps older 20.x working. */
function crc32(bytes: Uint8Array): number {
  if (typeof zlibCrc32 === 'function') return zlibCrc32(bytes);
  let c = 0xffffffff;
  for (const b of bytes) c = (CRC_TABLE[(c ^ b) & 0xff] as number) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export function frameLine(payload: string): string {
  return `${crc32(Buffer.from(payload, 'utf8')).toString(16).padStart(8, '0')} ${payload}\n`;
}

export interface ParsedLines {
  records: unknown[];
  /** Bytes of the buffer covered by valid, complete lines. */
  validLength: number;
  /** Why parsing stopped before the end, if it did. */
  problem?: string;
}

/** Parse framed lines from the start of `buf`, stopping at the first incomplete or invalid one. */
export function parseLines(buf: Buffer): ParsedLines {
  const records: unknown[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const nl = buf.indexOf(10, pos);
    if (nl === -1) return { records, validLength: pos, problem: `incomplete record at byte ${pos}` };
    const line = buf.subarray(pos, nl);
    const bad = (why: string): ParsedLines => ({ records, validLength: pos, problem: `${why} at byte ${pos}` });
    if (line.length < 10 || line[8] !== 0x20) return bad('malformed record');
    const hex = line.subarray(0, 8).toString('latin1');
    const payload = line.subarray(9);
    if (!/^[0-9a-f]{8}$/.test(hex) || crc32(payload) !== Number.parseInt(hex, 16)) return bad('checksum mismatch');
    try {
      records.push(JSON.parse(payload.toString('utf8')));
    } catch {
      return bad('unparsable record');
    }
    pos = nl + 1;
  }
  return { records, validLength: pos };
}
