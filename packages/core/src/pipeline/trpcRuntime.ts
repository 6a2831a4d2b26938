/**
 * The parts of tRPC's server runtime the other packages call, from core's one copy. Core's build
 * inlines @trpc/server (scripts/bundleDist.mjs --inline): its manifest requires `typescript` as a
 * peer, 31 MiB npm installs for every user, so for users @trpc/server is an optional peer needed only
 * for types. The transports take the fetch adapter and the error helpers from here instead of
 * importing @trpc/server themselves, which would need it installed at run time (and be a second copy).
 * @module
 */
export { getTRPCErrorFromUnknown, getTRPCErrorShape, transformTRPCResponse, TRPCError } from '@trpc/server';
export { getHTTPStatusCode } from '@trpc/server/http';
export { fetchRequestHandler } from '@trpc/server/adapters/fetch';
