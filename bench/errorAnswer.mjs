// What an error answer costs on /trpc with tRPC's development shape and without (2026-12-02: the
// core's tRPC instance is created with `isDev: false`). Two tRPC instances with core's error
// formatter, identical but for `isDev`, one refusing procedure each (a TRPCError, as a refusal
// is), called through tRPC's fetch adapter in one process, interleaved in rounds; the CPU per call
// (process.cpuUsage) of each, median of the rounds, and the ratio. On the build (`pnpm build`):
//   node bench/errorAnswer.mjs [calls per round=2000] [rounds=7]
import { initTRPC, TRPCError } from '@trpc/server';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import superjson from 'superjson';
import { formatTrpcError } from '@ai-backend/core/internal';

const CALLS = Number(process.argv[2] ?? 2000);
const ROUNDS = Number(process.argv[3] ?? 7);

function instance(isDev) {
  const t = initTRPC.create({
    transformer: superjson,
    isDev,
    errorFormatter: formatTrpcError,
  });
  const router = t.router({
    refuse: t.procedure.query(() => {
      throw new TRPCError({ code: 'UNAUTHORIZED', message: 'sign in first' });
    }),
  });
  return () =>
    fetchRequestHandler({ endpoint: '/trpc', req: new Request('http://localhost/trpc/refuse'), router, createContext: () => ({}) });
}

const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
async function round(call) {
  const c0 = cpu();
  for (let i = 0; i < CALLS; i++) {
    const res = await call();
    if (res.status !== 401) throw new Error(`expected 401, got ${res.status}`);
    await res.text();
  }
  return (cpu() - c0) / CALLS;
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const dev = instance(true);
const prod = instance(false);
await round(dev);
await round(prod);
const a = [];
const b = [];
for (let r = 0; r < ROUNDS; r++) {
  a.push(await round(dev));
  b.push(await round(prod));
}
console.log(`isDev true:  ${median(a).toFixed(1)} µs CPU per refused call (median of ${ROUNDS} rounds of ${CALLS})`);
console.log(`isDev false: ${median(b).toFixed(1)} µs CPU per refused call`);
console.log(`ratio (false / true): ${(median(b) / median(a)).toFixed(2)}x`);
