import { call, rpc } from '../api.js';
import { barChart } from '../charts.js';
import { fmt, h, section, table, THIS_PROCESS } from '../dom.js';
import type { View } from '../view.js';
import type { Output } from '../types.js';

/** One provider's line of ai.getRegistryHealth, as core types it. */
type ProviderHealth = NonNullable<Extract<Output<'ai.getRegistryHealth'>, { providers: unknown }>['providers']['openai']>;

/** Providers: health, breaker, probe, call figures, models (with prices where known), aliases and fallbacks. */
export const providersView: View = async (main) => {
  main.appendChild(h('h1', {}, 'Providers'));
  const [health, models, config, routing] = await Promise.all([
    call('ai.getRegistryHealth'),
    call('ai.listAllowedModels'),
    rpc<{
      ai: {
        ai: {
          aliases?: Record<string, unknown>;
          fallbacks?: unknown;
          providers?: Record<string, { fallbacks?: unknown; aliases?: unknown; pricing?: unknown }>;
        };
      };
    }>('admin.getConfig', { section: 'ai' }),
    call('admin.routes'),
  ]);
  const list = 'providers' in health ? (Object.entries(health.providers) as Array<[string, ProviderHealth]>) : [];
  main.appendChild(
    h(
      'p',
      { id: 'registry-status', class: `badge ${health.status}` },
      `Registry: ${health.status}${'error' in health ? ` (${health.error.message})` : ''} · checked ${fmt.time(health.checkedAt)}`,
    ),
  );
  const grid = h('div', { class: 'grid' });
  main.appendChild(grid);
  // ai.getRegistryHealth counts in this process since it started (the cluster-wide upstream figures are on the overview).
  barChart(
    grid.appendChild(h('div', { class: 'card' })),
    'provider-calls',
    `Calls and failures by provider (${THIS_PROCESS})`,
    list.map(([id]) => id),
    [
      { label: 'calls', values: list.map(([, p]) => p.calls) },
      { label: 'failures', values: list.map(([, p]) => p.failures) },
    ],
  );
  barChart(
    grid.appendChild(h('div', { class: 'card' })),
    'provider-latency',
    `Average latency by provider (${THIS_PROCESS})`,
    list.map(([id]) => id),
    [{ label: 'avg', values: list.map(([, p]) => p.avgLatencyMs) }],
    { unit: ' ms' },
  );
  main.appendChild(
    section(
      'Health',
      table(
        ['provider', 'usable', 'pays', 'breaker', 'last probe', `calls (${THIS_PROCESS})`, `failures (${THIS_PROCESS})`, 'last failure'],
        list.map(([id, p]) => [
          id,
          p.available ? 'yes' : 'no',
          [p.serverPaid ? 'server' : '', p.byok ? 'own key' : ''].filter(Boolean).join(', ') || '–',
          h('span', { class: `badge ${p.breaker}`, 'data-breaker': id }, p.breaker),
          p.probe
            ? `${p.probe.ok ? 'ok' : 'failed'}${p.probe.reason ? `: ${p.probe.reason}` : ''} · ${fmt.time(p.probe.checkedAt)}`
            : 'not probed',
          fmt.int(p.calls),
          fmt.int(p.failures),
          p.lastFailure ? `${fmt.time(p.lastFailure.at)} ${p.lastFailure.reason}` : '–',
        ]),
      ),
    ),
  );
  // Routes: this instance's counts beside the shared cooldowns and rpm/tpm used this minute.
  for (const r of routing.routes) {
    main.appendChild(
      section(
        `Route ${r.name} (${r.strategy}, retries ${r.retries}, cooldown ${r.cooldownSec} s)`,
        table(
          [
            'target',
            'weight / priority',
            `calls (${THIS_PROCESS})`,
            'share',
            'avg latency',
            'errors',
            'in flight',
            'cooling down until',
            'rpm headroom',
            'tpm headroom',
          ],
          r.targets.map((t) => [
            t.model,
            `${t.weight} / ${t.priority}`,
            fmt.int(t.calls),
            `${Math.round(t.share * 100)} %`,
            t.avgLatencyMs === null ? '–' : `${t.avgLatencyMs} ms`,
            fmt.int(t.errors),
            fmt.int(t.inFlight),
            h('span', { 'data-cooldown': t.model }, t.coolingDownUntil ? fmt.time(t.coolingDownUntil) : '–'),
            t.rpmHeadroom === null ? '–' : `${t.rpmHeadroom} of ${t.rpm}`,
            t.tpmHeadroom === null ? '–' : `${t.tpmHeadroom} of ${t.tpm}`,
          ]),
        ),
      ),
    );
  }
  if (routing.cache) {
    const c = routing.cache;
    main.appendChild(
      section(
        `Response cache (${THIS_PROCESS})`,
        table(
          ['hits', 'misses', 'hit rate', 'tokens saved', 'USD saved'],
          [
            [
              fmt.int(c.hits),
              fmt.int(c.misses),
              c.hitRate === null ? '–' : `${Math.round(c.hitRate * 100)} %`,
              fmt.int(c.tokensSaved),
              `$${c.usdSaved}`,
            ],
          ],
        ),
      ),
    );
  }
  const ai = config.ai.ai;
  main.appendChild(
    section(
      'Models',
      table(
        ['provider', 'models'],
        Object.entries(models.models).map(([p, ms]) => [p, ms.length ? ms.join(', ') : '(none allowed)']),
      ),
    ),
  );
  main.appendChild(
    section(
      'Aliases, fallbacks and prices (configuration)',
      h(
        'pre',
        { class: 'json' },
        JSON.stringify(
          {
            aliases: ai.aliases ?? {},
            fallbacks: ai.fallbacks ?? {},
            providers: Object.fromEntries(
              Object.entries(ai.providers ?? {}).map(([id, p]) => [id, { fallbacks: p.fallbacks, aliases: p.aliases, pricing: p.pricing }]),
            ),
          },
          null,
          2,
        ),
      ),
    ),
  );
};
