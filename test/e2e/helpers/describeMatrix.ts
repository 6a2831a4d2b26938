import { describe } from 'vitest';
import { MODES, type Mode } from './testServer.js';

/**
 * Run a transport suite once in-process (`app.fetch`) and once against a real listening Node
 * server (STYLE.md practice 10, h3's describeMatrix). Inside, build the server with
 * `serverFor(mode, config)`.
 */
export function describeMatrix(name: string, suite: (mode: Mode) => void, modes: readonly Mode[] = MODES): void {
  describe.each(modes)(`${name} [%s]`, (mode) => suite(mode));
}
