import { provide } from '../../pipeline/provide.js';

/** What the keys namespace's procedures use, in their ctx (the router gives the scopes a key may hold). */
export const keysServices = provide((r) => ({ keys: r.keys, users: r.users, router: r.router }));
