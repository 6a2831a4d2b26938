import { z } from 'zod';

/**
 * zod is a peer dependency: core builds its config schemas with the app's zod, so they and the
 * app's procedure schemas are one zod. npm refuses zod 3 against the `zod@^4` peer range, but
 * `--legacy-peer-deps`/`--force` install it anyway, and then the first zod 4 call in a schema
 * module fails with `….prefault is not a function`. Checked first (core's index imports this
 * module before any schema) so the user reads what to install instead.
 * A plain Error: this is an install problem, thrown while modules load, not a config or wire error.
 */
if (!('_zod' in z.string())) {
  throw new Error("ai-backend needs zod 4, but the 'zod' your app resolves is zod 3: install zod@^4 (npm i zod@^4)");
}
