import { z, ZodError } from 'zod';

/**
 * The zod every module of core builds its schemas with: `import { z } from '../lib/zod.js'`, never
 * `from 'zod'` (.dependency-cruiser.cjs enforces it). zod is a peer dependency, so core's schemas
 * and the app's procedure schemas are one zod. npm refuses zod 3 against the `zod@^4` peer range,
 * but `--legacy-peer-deps`/`--force` install it anyway, and then the first zod 4 call in a schema
 * module fails with `….prefault is not a function`. This check runs first so the user reads what
 * to install instead; it is a dependency of every schema module rather than a first import of the
 * entry, because the bundler does not keep the order of side effects across the chunks it splits.
 * A plain Error: this is an install problem, thrown while modules load, not a config or wire error.
 */
if (!('_zod' in z.string())) {
  throw new Error("ai-backend needs zod 4, but the 'zod' your app resolves is zod 3: install zod@^4 (npm i zod@^4)");
}

export { z, ZodError };
