/**
 * The in-process origins of helpers/inProcessOrigin.ts stay below port 1023 however many servers
 * the files sharing a worker's module graph start (project 'e2e' in vitest.config.ts: one copy of
 * the helper for some 90 files), and a port still routed is never handed out twice. Before, the
 * port only counted up from 700: a few hundred servers in one worker later it was 1024 and more,
 * where a real server may listen.
 */
import { expect, it } from 'vitest';
import { routeInProcess } from './helpers/inProcessOrigin.js';

const portOf = (url: string) => Number(new URL(url).port);
const answer = async () => new Response('ok');

it('hands out ports 700 to 1023 only, round and round, skipping the ones still routed', async () => {
  const kept = routeInProcess(answer);
  const seen = new Set<number>();
  for (let i = 0; i < 1000; i++) {
    const route = routeInProcess(answer);
    expect(portOf(route.url)).toBeGreaterThanOrEqual(700);
    expect(portOf(route.url)).toBeLessThanOrEqual(1023);
    expect(route.url).not.toBe(kept.url);
    seen.add(portOf(route.url));
    route.release();
  }
  // Every port of the range but the one still routed came round.
  expect(seen.size).toBe(1023 - 700);
  expect(await (await fetch(`${kept.url}/`)).text()).toBe('ok');
  kept.release();
});
