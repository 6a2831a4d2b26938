import { readFileSync } from 'node:fs';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Orders test files longest first, so the suite does not end with one long file running alone on a
 * worker while the others sit idle. vitest does this by itself from its own cache of the last run on
 * this checkout; a clean clone (CI) has no cache, and vitest then starts the largest files first,
 * which leaves the slowest ones (a PostgreSQL crash suite, the install smoke test, the SBOM) for the
 * end. Here a file without a cached result takes its duration from test/durations.json (committed,
 * written by scripts/testDurations.mjs from a JSON report); a file in neither goes first, as vitest
 * does with unknown files. Only the order changes: every file still runs.
 */
export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const committed = readDurations(path.join(root, 'test/durations.json'));
    const durationOf = (spec: TestSpecification): number => {
      const rel = path.relative(root, spec.moduleId).split(path.sep).join('/');
      const cached = this.ctx.cache.getFileTestResults(`${spec.project.name}:${rel}`);
      if (cached?.failed) return Number.POSITIVE_INFINITY; // failed last time: first, as vitest does
      return cached?.duration ?? committed[rel] ?? Number.POSITIVE_INFINITY;
    };
    const sorted = await super.sort(files); // keeps vitest's grouping (projects, isolation) as the tie-break
    const rank = new Map(sorted.map((spec) => [spec, durationOf(spec)]));
    return sorted.sort((a, b) => rank.get(b)! - rank.get(a)! || 0);
  }
}

function readDurations(file: string): Record<string, number> {
  try {
    return (JSON.parse(readFileSync(file, 'utf8')) as { files: Record<string, number> }).files;
  } catch {
    return {}; // no list: vitest's own order
  }
}
