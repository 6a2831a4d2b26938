// The `prepack` of every private workspace package: `pnpm pack` there, or `pnpm -r pack` from the
// root (which pnpm cannot make skip private packages), stops before a tarball of a package that is
// never published is written, and says how to pack the published ones (scripts/packPackages.mjs).
import { readFileSync } from 'node:fs';

const { name, private: isPrivate } = JSON.parse(readFileSync('package.json', 'utf8'));
if (isPrivate === true) {
  console.error(
    `${name} is private and never published: not packed. To pack the published packages: npx -y pnpm@10.34.9 pack-packages <dir> (docs/publishing.md)`,
  );
  process.exit(1);
}
