// Split a callgrind count into V8's optimizing compiler, the garbage collector and the rest (the
// request's own JS, Node and V8 runtime: the steady part), per call, by each function's own cost
// in `callgrind_annotate`: `node bench/callgrindSplit.mjs <callgrind.out file> <calls counted>`.
// The out file of `bench/mcpInstructions.mjs` is the `out.<pid>.1` in its tmp directory (the dump
// taken after the counted calls). Compiler: `v8::internal::compiler::`; GC: the scavenger,
// marking, sweeping, evacuation, heap and allocation-site functions (the pattern below).
import { execFileSync } from 'node:child_process';

const [file, callsS] = process.argv.slice(2);
if (!file || !callsS) throw new Error('usage: node bench/callgrindSplit.mjs <callgrind.out file> <calls counted>');
const calls = Number(callsS);
const GC =
  /Scaveng|Marking|Sweep|MarkCompact|Evacuat|heap::base|v8::internal::Heap::|MemoryAllocator|RememberedSet|SlotSet|PretenuringHandler|GCTracer|MinorMark|NewSpace|PagedSpace|LargeObjectSpace|FreeList|MarkingBarrier|ArrayBufferSweeper/;
const out = execFileSync('callgrind_annotate', ['--threshold=100', file], { maxBuffer: 1 << 28, encoding: 'utf8' });
let total = 0;
let compiler = 0;
let gc = 0;
for (const line of out.split('\n')) {
  const m = /^\s*([\d,]+) \([ \d.]+%\)\s+(.*)$/.exec(line);
  if (!m || m[2].includes('PROGRAM TOTALS')) continue;
  const ir = Number(m[1].replaceAll(',', ''));
  total += ir;
  if (m[2].includes('v8::internal::compiler::')) compiler += ir;
  else if (GC.test(m[2])) gc += ir;
}
const perCall = (x) => Number((x / calls / 1e6).toFixed(3));
console.log(JSON.stringify({ total: perCall(total), compiler: perCall(compiler), gc: perCall(gc), rest: perCall(total - compiler - gc) }));
