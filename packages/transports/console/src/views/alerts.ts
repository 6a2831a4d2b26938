import { call } from '../api.js';
import { barChart } from '../charts.js';
import { clear, errorBox, fmt, h, section, stat, table } from '../dom.js';
import type { View } from '../view.js';
import type { AlertDelivery as Delivery } from '../types.js';

/** Alerts: outbound webhook deliveries waiting and dead, with a retry button per delivery. */
export const alertsView: View = async (main) => {
  main.appendChild(h('h1', {}, 'Alerts'));
  const body = h('div', {});
  main.appendChild(body);
  const draw = async (message?: string) => {
    const d = await call('admin.alertDeliveries', { limit: 100 });
    clear(body);
    if (!d.enabled) body.appendChild(h('p', { class: 'muted' }, 'No alert webhooks are configured (alerts.webhooks).'));
    body.appendChild(h('p', { role: 'status', id: 'alert-status' }, message ?? ''));
    body.appendChild(
      h(
        'div',
        { class: 'stats' },
        stat('Waiting', fmt.int(d.pending.length), 'alerts-pending'),
        stat('Dead letters', fmt.int(d.dead.length), 'alerts-dead'),
      ),
    );
    const events = [...new Set([...d.pending, ...d.dead].map((x) => x.event))].sort();
    barChart(body.appendChild(h('div', { class: 'card' })), 'alerts-by-event', 'Deliveries by event', events, [
      { label: 'waiting', values: events.map((e) => d.pending.filter((x) => x.event === e).length) },
      { label: 'dead', values: events.map((e) => d.dead.filter((x) => x.event === e).length) },
    ]);
    const retry = (x: Delivery) =>
      h(
        'button',
        {
          'data-retry': x.deliveryId,
          onclick: async () => {
            try {
              const r = await call('admin.retryAlert', { deliveryId: x.deliveryId });
              await draw(`${x.event} ${r.state === 'requeued' ? 'sent again' : 'due now'}.`);
            } catch (e) {
              body.prepend(errorBox(e));
            }
          },
        },
        x.state === 'dead' ? 'Retry' : 'Send now',
      );
    const rows = (list: Delivery[]) =>
      list.map((x) => [
        x.event,
        x.receiver,
        fmt.int(x.attempts),
        fmt.time(x.createdAt),
        x.state === 'pending' ? fmt.time(x.nextAt) : '–',
        x.lastError ?? '–',
        retry(x),
      ]);
    const headers = ['event', 'receiver', 'attempts', 'created', 'next attempt', 'last error', ''];
    body.appendChild(section('Dead letters', d.dead.length ? table(headers, rows(d.dead)) : h('p', { class: 'muted' }, 'None.')));
    body.appendChild(
      section('Waiting for delivery', d.pending.length ? table(headers, rows(d.pending)) : h('p', { class: 'muted' }, 'None.')),
    );
  };
  await draw().catch((e: unknown) => body.appendChild(errorBox(e)));
};
