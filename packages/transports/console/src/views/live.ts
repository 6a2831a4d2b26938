import { call } from '../api.js';
import { clear, fmt, h, section } from '../dom.js';
import type { View } from '../view.js';
import type { RecentCall } from '../types.js';

const KEEP = 200;
const POLL_MS = 2000;

/**
 * Live: the most recent calls on the instance serving the console, newest first, polled every two
 * seconds (only calls after the last one seen travel). No input, prompt or answer is ever shown.
 */
export const liveView: View = async (main) => {
  main.appendChild(h('h1', {}, 'Live'));
  const rate = h('p', { role: 'status', id: 'live-rate' });
  const tbody = h('tbody', { id: 'live-calls' });
  main.appendChild(
    section(
      'Recent calls (this instance)',
      rate,
      h(
        'table',
        {},
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['time', 'entry', 'procedure', 'caller', 'status', 'latency', 'tokens'].map((x) => h('th', { scope: 'col' }, x)),
          ),
        ),
        tbody,
      ),
    ),
  );
  let calls: RecentCall[] = [];
  let after = 0;
  let stopped = false;
  const tick = async () => {
    const r = await call('admin.recentCalls', { limit: 100, ...(after ? { after } : {}) });
    after = Math.max(after, r.lastSeq);
    // New calls and updated ones (a stream that ended: its tokens) arrive alike: keep one row per seq.
    const fresh = new Set(r.calls.map((c) => c.seq));
    calls = [...r.calls, ...calls.filter((c) => !fresh.has(c.seq))].sort((a, b) => b.seq - a.seq).slice(0, KEEP);
    clear(tbody);
    for (const c of calls) {
      const tokens = c.streaming ? 'streaming…' : c.tokens === null ? '–' : fmt.int(c.tokens);
      tbody.appendChild(
        h(
          'tr',
          { class: c.status === 'ok' ? '' : 'failed', 'data-seq': c.seq },
          [new Date(c.at).toLocaleTimeString(), c.entry, c.procedure, c.identity ?? 'anonymous', c.status, `${c.latencyMs} ms`, tokens].map(
            (x) => h('td', {}, x),
          ),
        ),
      );
    }
    const minute = calls.filter((c) => Date.now() - Date.parse(c.at) < 60_000);
    rate.textContent = `${minute.length} calls in the last minute, ${minute.filter((c) => c.status !== 'ok').length} failed.`;
  };
  await tick();
  const loop = async () => {
    while (!stopped) {
      await new Promise((r) => setTimeout(r, POLL_MS));
      if (!stopped) await tick().catch(() => undefined);
    }
  };
  void loop();
  return () => {
    stopped = true;
  };
};
