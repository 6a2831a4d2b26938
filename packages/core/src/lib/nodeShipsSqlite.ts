/** The first Node 22 release with node:sqlite available without a flag (23.4 on the odd line). */
export const NODE_SQLITE_SINCE = '22.13.0';

/**
 * Does this Node ship node:sqlite without a flag? Decided from the version, so asking never loads
 * the module (which prints an ExperimentalWarning on Node 22).
 */
export function nodeShipsSqlite(version: string = process.versions.node): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major >= 24 || (major === 23 && minor >= 4) || (major === 22 && minor >= 13);
}
