import { call, rpc } from '../api.js';
import { clear, errorBox, fmt, h, section, stat, table } from '../dom.js';
import type { View } from '../view.js';
import { budgetSection, keysTable, ledgerSection, usageCharts } from '../userParts.js';

/** The spec's three providers have their own key procedures; named providers use storeProviderKey. */
const SPEC_PROVIDERS = new Set(['anthropic', 'openai', 'google']);

/**
 * The signed-in user's own account (every user, administrators too): balance, usage over time,
 * history, budgets, own provider keys (store, rotate, delete) and API keys.
 */
export const meView: View = async (main, me) => {
  main.appendChild(h('h1', {}, 'My account'));
  const [balance, analytics, budget] = await Promise.all([
    call('billing.getTokenBalance'),
    call('billing.getUsageAnalytics', { days: 30 }),
    call('billing.getBudget'),
  ]);
  main.appendChild(
    h(
      'div',
      { class: 'stats', id: 'balances' },
      stat('Subscription tokens', fmt.int(balance.balances.subscription), 'balance-subscription'),
      stat('One-time tokens', fmt.int(balance.balances.one_time), 'balance-one-time'),
      stat('Total', fmt.int(balance.virtualTokenBalance), 'balance-total'),
    ),
  );
  usageCharts(main, analytics);
  const method = {
    usage: 'billing.getUsageHistory',
    purchases: 'billing.getPurchaseHistory',
    consumption: 'billing.getConsumptionHistory',
  } as const;
  const field = { usage: 'usage', purchases: 'purchases', consumption: 'consumption' } as const;
  main.appendChild(
    ledgerSection(async (kind, cursor) => {
      const page = await rpc<Record<string, unknown> & { nextCursor?: number }>(method[kind], {
        limit: 20,
        ...(cursor !== undefined ? { cursor } : {}),
      });
      return {
        items: page[field[kind]] as Array<Record<string, unknown>>,
        ...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {}),
      };
    }),
  );
  main.appendChild(budgetSection(budget.periods));
  const byok = section('Own provider keys (BYOK)');
  main.appendChild(byok);
  await drawByok(byok, me.email ?? me.userId);
  const keys = section('API keys');
  main.appendChild(keys);
  await drawKeys(keys);
};

async function drawByok(host: HTMLElement, owner: string): Promise<void> {
  const body = h('div', {});
  host.appendChild(body);
  const redraw = async () => {
    clear(body);
    const [status, { providers }] = await Promise.all([call('user.getBYOKStatus'), call('ai.listProvidersBYOK')]);
    const ids = [...new Set([...providers.map((p) => p.id), ...Object.keys(status.providers)])];
    if (!ids.length) return void body.appendChild(h('p', { class: 'muted' }, 'This server accepts no own keys.'));
    const msg = h('p', { role: 'status', id: 'byok-status' });
    const act = async (op: 'store' | 'rotate' | 'delete', provider: string, apiKey?: string) => {
      const spec = SPEC_PROVIDERS.has(provider);
      const methodName =
        op === 'delete'
          ? spec
            ? 'auth.deleteUserKey'
            : 'auth.deleteProviderKey'
          : op === 'rotate' && spec
            ? 'auth.rotateUserKey'
            : spec
              ? 'auth.storeUserKey'
              : 'auth.storeProviderKey';
      const params: Record<string, unknown> = { email: owner, provider };
      if (apiKey !== undefined) params[op === 'rotate' && spec ? 'newApiKey' : 'apiKey'] = apiKey;
      try {
        await rpc(methodName, params);
        await redraw();
        body.querySelector('#byok-status')!.textContent =
          `${provider}: key ${op === 'delete' ? 'deleted' : op === 'rotate' ? 'rotated' : 'stored'}.`;
      } catch (e) {
        clear(msg);
        msg.appendChild(errorBox(e));
      }
    };
    body.append(
      table(
        ['provider', 'key', 'set / replace', ''],
        ids.map((id) => {
          const s = status.providers[id];
          // A password field: the key is typed, sent once and never shown back (only its last 4).
          const input = h('input', {
            type: 'password',
            autocomplete: 'off',
            placeholder: 'API key',
            'aria-label': `${id} API key`,
            'data-byok-input': id,
          });
          return [
            id,
            s?.hasApiKey ? `stored${s.last4 ? ` (…${s.last4})` : ''}` : 'none',
            h(
              'form',
              {
                class: 'row',
                onsubmit: (ev: Event) => {
                  ev.preventDefault();
                  const key = input.value.trim();
                  input.value = '';
                  if (key) void act(s?.hasApiKey ? 'rotate' : 'store', id, key);
                },
              },
              input,
              h('button', { type: 'submit', 'data-byok-save': id }, s?.hasApiKey ? 'Rotate' : 'Store'),
            ),
            s?.hasApiKey
              ? h(
                  'button',
                  { 'data-byok-delete': id, onclick: () => confirm(`Delete your ${id} key?`) && void act('delete', id) },
                  'Delete',
                )
              : '',
          ];
        }),
      ),
      msg,
    );
  };
  await redraw().catch((e: unknown) => body.appendChild(errorBox(e)));
}

async function drawKeys(host: HTMLElement): Promise<void> {
  const body = h('div', {});
  const created = h('div', { id: 'new-key' });
  const name = h('input', { id: 'key-name', type: 'text', maxlength: 100, placeholder: 'what the key is for', required: true });
  const redraw = async () => {
    clear(body);
    try {
      const { keys } = await call('keys.list');
      body.appendChild(
        keys.length
          ? keysTable(keys, (k) =>
              k.revokedAt
                ? null
                : h(
                    'button',
                    {
                      onclick: () =>
                        confirm(`Revoke "${k.name}"?`) &&
                        void rpc('keys.revoke', { id: k.id }).then(redraw, (e: unknown) => body.appendChild(errorBox(e))),
                    },
                    'Revoke',
                  ),
            )
          : h('p', { class: 'muted' }, 'No API keys yet.'),
      );
    } catch (e) {
      body.appendChild(errorBox(e));
    }
  };
  host.append(
    h(
      'form',
      {
        class: 'row',
        onsubmit: async (ev: Event) => {
          ev.preventDefault();
          clear(created);
          try {
            const r = await call('keys.create', { name: name.value.trim() });
            name.value = '';
            // Shown this once (the server keeps only a hash); not stored anywhere by the console.
            created.append(
              h('p', {}, 'Your new key (copy it now; it is not shown again):'),
              h('input', { type: 'text', readonly: true, value: r.key, class: 'wide', 'aria-label': 'new API key' }),
            );
            await redraw();
          } catch (e) {
            created.appendChild(errorBox(e));
          }
        },
      },
      h('label', { for: 'key-name' }, 'New key'),
      name,
      h('button', { type: 'submit' }, 'Create'),
    ),
    created,
    body,
  );
  await redraw();
}
