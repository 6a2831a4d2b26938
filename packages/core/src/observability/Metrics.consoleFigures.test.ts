import { describe, expect, it } from 'vitest';
import { createMetrics } from './Metrics.js';

describe('Metrics.consoleFigures', () => {
  it('per provider: calls, failures, latency p50/p99 (bucket bounds), tokens and money by payer; MCP sources', async () => {
    const m = await createMetrics({ processMetrics: false });
    for (let i = 0; i < 98; i++) m.upstream('openai', 'gpt-x', '2xx', 0.08); // bucket 0.1 s
    m.upstream('openai', 'gpt-x', '5xx', 3); // bucket 4 s
    m.upstream('openai', 'gpt-x', 'network', undefined); // no latency
    m.upstream('google', 'g', '2xx', 0.3); // bucket 0.5 s
    m.metered('openai', 'gpt-x', 'platform', 120, 0.002);
    m.metered('openai', 'gpt-x', 'byok', 30, 0.001);
    m.setMcpSources(
      () => 3,
      () => 2,
    );
    const f = await m.consoleFigures();
    expect(f.mcp).toEqual({ sessions: 3, streams: 2 });
    const openai = f.providers.find((p) => p.provider === 'openai')!;
    expect(openai).toMatchObject({ calls: 100, failures: 2, p50Ms: 100, p99Ms: 4000, tokens: { platform: 120, byok: 30 } });
    expect(openai.costUsd.platform).toBeCloseTo(0.002, 10);
    expect(f.providers.find((p) => p.provider === 'google')).toMatchObject({ calls: 1, failures: 0, p50Ms: 500, p99Ms: 500 });
  });

  it('a provider without calls has no latency', async () => {
    const m = await createMetrics({ processMetrics: false });
    m.metered('anthropic', 'c', 'platform', 5, undefined);
    expect((await m.consoleFigures()).providers).toEqual([
      {
        provider: 'anthropic',
        calls: 0,
        failures: 0,
        p50Ms: null,
        p99Ms: null,
        tokens: { platform: 5, byok: 0 },
        costUsd: { platform: 0, byok: 0 },
      },
    ]);
  });
});
