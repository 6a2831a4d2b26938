import { z } from '../lib/zod.js';
import { SECTION_DEFAULTS } from './sectionDefaults.js';

const builders = new Map<string, () => z.ZodType>();

/**
 * A config section whose schema is built the first time a config names it. A config that leaves
 * the section out gets a fresh copy of its defaults from `sectionDefaults.ts` (generated from
 * the same builders by `node scripts/genConfigDefaults.mjs`; `lazySection.test.ts` fails when it
 * is stale), so a start-up builds and compiles only the sections it uses: the whole schema is
 * about 2 MB of zod objects and 20 ms of a default server's start (docs/performance.md, "Seventh
 * session"). Results and error messages are the same as with the section built eagerly.
 *
 * `path` is the section's place in the config (`ai`, `mcp.budgets`); a lazy section is never
 * nested in another, so each default is generated from one builder.
 */
export function lazySection<T extends z.ZodType>(path: string, build: () => T) {
  if (builders.has(path)) throw new Error(`config section "${path}" is declared twice`);
  builders.set(path, build);
  return z.lazy(build).default(() => structuredClone(SECTION_DEFAULTS[path]) as never);
}

/** Every lazy section's builder by path: for the generator and the staleness test. */
export function lazySectionBuilders(): ReadonlyMap<string, () => z.ZodType> {
  return builders;
}
