/**
 * The floors (.dependency-cruiser.cjs, docs/architecture.md) hold: dependency-cruiser finds no
 * import circle, no upward import between packages and no core layer importing one above it.
 * The second test shows the rules bite: a tree with a circle and an upward import is refused.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CONFIG = path.join(ROOT, '.dependency-cruiser.cjs');
const BIN = path.join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');
const run = promisify(execFile);

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
  cycle?: Array<{ name: string }>;
}

async function cruise(cwd: string, dirs: string[]): Promise<{ violations: Violation[]; modules: number }> {
  // dependency-cruiser exits non-zero when it finds violations; the JSON is on stdout either way.
  const out = await run(process.execPath, [BIN, ...dirs, '--config', CONFIG, '--output-type', 'json'], { cwd, maxBuffer: 64 * 1024 * 1024 }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
  const json = JSON.parse(out.stdout) as { summary: { violations: Violation[]; totalCruised: number } };
  return { violations: json.summary.violations, modules: json.summary.totalCruised };
}

const describeViolation = (v: Violation) => `${v.rule.name}: ${v.from} → ${v.to}${v.cycle ? ` (${v.cycle.map((c) => c.name).join(' → ')})` : ''}`;

describe('dependency rules', () => {
  it('every package: no circle, no upward import, core layers in order', async () => {
    const { violations, modules } = await cruise(ROOT, ['packages/core/src', 'packages/auth/src', 'packages/transports/src', 'packages/cli/src', 'packages/test-utils/src']);
    expect(modules).toBeGreaterThan(250);
    expect(violations.map(describeViolation)).toEqual([]);
  }, 120_000);

  it('a circle, an upward layer import, a service floor importing one above it, an upward package import and zod not taken from lib/zod.ts are each refused', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'ai-backend-deprules-'));
    try {
      const files: Record<string, string> = {
        'tsconfig.json': JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true } }),
        'packages/core/src/kernel/CoreError.ts': "import { charge } from '../services/billing.js';\nexport const e = charge;\n",
        'packages/core/src/services/billing.ts': "import { e } from '../kernel/CoreError.js';\nexport const charge = () => e;\n",
        'packages/auth/src/verify.ts': "import { serve } from '../../transports/src/serve.js';\nexport const verify = serve;\n",
        'packages/transports/src/serve.ts': 'export const serve = 1;\n',
        // A service floor importing one above it: spend is below apiKeys.
        'packages/core/src/services/spend/periodSpend.ts': "import { keySpend } from '../apiKeys/keySpend.js';\nexport const spend = keySpend;\n",
        'packages/core/src/services/apiKeys/keySpend.ts': 'export const keySpend = 1;\n',
        // zod straight from the package instead of lib/zod.ts (which checks it is zod 4 first).
        'packages/core/src/config/raw.ts': "import { z } from 'zod';\nexport const s = z.string();\n",
        'packages/core/src/lib/zod.ts': "import { z } from 'zod';\nexport { z };\n",
      };
      for (const [name, text] of Object.entries(files)) {
        await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
        await writeFile(path.join(dir, name), text);
      }
      // The real zod: node_modules is not followed, but its modules are what the rule names.
      await mkdir(path.join(dir, 'node_modules'), { recursive: true });
      await symlink(path.join(ROOT, 'node_modules/zod'), path.join(dir, 'node_modules/zod'), 'dir');
      const { violations } = await cruise(dir, ['packages']);
      const rules = new Set(violations.map((v) => v.rule.name));
      expect(rules).toContain('no-circular');
      expect(rules).toContain('core-layer-kernel-lib');
      expect(rules).toContain('package-auth-no-upward');
      expect(violations.filter((v) => v.rule.name.startsWith('core-services-')).map(describeViolation)).toEqual([
        'core-services-spend: packages/core/src/services/spend/periodSpend.ts → packages/core/src/services/apiKeys/keySpend.ts',
      ]);
      expect(violations.filter((v) => v.rule.name === 'core-zod-through-lib').map((v) => v.from)).toEqual(['packages/core/src/config/raw.ts']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
