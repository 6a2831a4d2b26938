import { describe } from 'vitest';
import { MODES, type Mode } from './testServer.js';

/**
 * The modes describeMatrix runs a suite in: both, unless AI_BACKEND_TEST_MODES names some
 * (comma-separated). CI sets `listening` on the Nodes other than its primary (docs/testing.md, "CI:
 * phases and times"): the listening run makes the in-process run's calls through the same app
 * and through Node's HTTP server as well, so on those Nodes the in-process one only repeated it;
 * the primary runs both. A name that is not a mode fails the run rather than running nothing.
 */
export function matrixModes(value: string | undefined): readonly Mode[] {
  if (!value) return MODES;
  const names = value.split(',').map((m) => m.trim());
  for (const m of names)
    if (!(MODES as readonly string[]).includes(m)) throw new Error(`AI_BACKEND_TEST_MODES: ${m} is not one of ${MODES.join(', ')}`);
  return MODES.filter((m) => names.includes(m));
}
const DEFAULT_MODES = matrixModes(process.env.AI_BACKEND_TEST_MODES);

/**
 * Run a transport suite once in-process (`app.fetch`) and once against a real listening Node
 * server (STYLE.md practice 10, h3's describeMatrix). Inside, build the server with
 * `serverFor(mode, config)`.
 */
export function describeMatrix(name: string, suite: (mode: Mode) => void, modes: readonly Mode[] = DEFAULT_MODES): void {
  describe.each(modes)(`${name} [%s]`, (mode) => suite(mode));
}

/** The two ways a /v1 call reaches its upstream (docs/ai.md#pass-through): through the AI SDK, or passed through. */
export type V1Path = 'sdk' | 'pass-through';

/**
 * Run a /v1 wire-format suite on both paths (`ai.passThrough` off and on), each paired with one
 * transport mode so the suite takes as long as describeMatrix's two runs: in-process on the SDK
 * path, a listening server on the pass-through path (the default, what deployments run). Build
 * the server with `startAiServer(upstream, config, { mode, path })`.
 */
export function describeV1Matrix(name: string, suite: (mode: Mode, path: V1Path) => void): void {
  const runs: ReadonlyArray<readonly [Mode, V1Path]> = [
    ['in-process', 'sdk'],
    ['listening', 'pass-through'],
  ];
  describe.each(runs)(`${name} [%s, %s path]`, (mode, path) => suite(mode, path));
}

/**
 * Run a suite once per /v1 path (`ai.passThrough` off, then on), each against its own server: for
 * the suites whose /v1 calls must behave and be charged the same on both paths (metering under
 * cancels, fallbacks, the cache, routes, money limits), beside describeV1Matrix's wire-format
 * suites. Build the servers with `startAiServer(upstream, config, { path })`.
 */
export function describeV1Paths(name: string, suite: (path: V1Path) => void): void {
  const paths: readonly V1Path[] = ['sdk', 'pass-through'];
  describe.each(paths)(`${name} [%s path]`, (path) => suite(path));
}
