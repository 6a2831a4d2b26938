import type { ReadLogOptions } from '../kernel/Storage.js';

/** The sequence numbers a readLog call returns from a log of `length` records, in order. */
export function sliceLog(length: number, opts?: ReadLogOptions): number[] {
  const limit = opts?.limit ?? Number.MAX_SAFE_INTEGER;
  const out: number[] = [];
  if (limit <= 0) return out;
  if (opts?.newestFirst) {
    const top = Math.min(length, (opts.before ?? length + 1) - 1);
    for (let seq = top; seq >= 1 && out.length < limit; seq--) out.push(seq);
    return out;
  }
  for (let seq = Math.max(0, opts?.after ?? 0) + 1; seq <= length && out.length < limit; seq++) out.push(seq);
  return out;
}
