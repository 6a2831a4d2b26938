import { call } from '../api.js';
import { clear, errorBox, fmt, h, section, stat } from '../dom.js';
import type { View } from '../view.js';
import { budgetSection, keysTable, ledgerSection, usageCharts } from '../userParts.js';

/**
 * One user, for administrators: balances, usage per day, ledger pages, budgets, BYOK status
 * (which providers have a key, never the key) and API keys; credit tokens with a confirmation.
 */
export const userView: View = async (main, _me, ref) => {
  const userRef = ref ?? '';
  const head = h('div', {});
  main.append(h('p', {}, h('a', { href: '#/users' }, '← Users')), head);
  const [info, analytics, keys] = await Promise.all([
    call('admin.getUserInfo', { userId: userRef, includeUsage: true }),
    call('admin.userUsage', { userId: userRef, days: 30 }),
    // A failure here (API keys off, a store error) is shown in its section, not as "no keys".
    call('keys.adminList', { userId: userRef }).then(
      (r) => r.keys,
      (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
    ),
  ]);
  const balances = h('div', { class: 'stats', id: 'balances' });
  const drawBalances = (b: { subscription: number; one_time: number }) => {
    clear(balances);
    balances.append(
      stat('Subscription tokens', fmt.int(b.subscription), 'balance-subscription'),
      stat('One-time tokens', fmt.int(b.one_time), 'balance-one-time'),
      stat('Total', fmt.int(b.subscription + b.one_time), 'balance-total'),
    );
  };
  // Asked for with includeUsage: true, so it is there; typed optional because the procedure can leave it out.
  const usage = info.usage!;
  drawBalances(usage.balances);
  head.append(
    h('h1', {}, info.email ? `${info.email}` : info.userId),
    h('p', { class: 'muted' }, `id ${info.userId}${info.isAdmin ? ' · administrator' : ''} · last seen ${fmt.time(info.lastSeenAt)}`),
    balances,
  );

  // Ledger items are typed unknown by the procedure (three kinds of record): the section prints their fields as text.
  const ledger = ledgerSection(async (kind, cursor) => {
    const page = await call('admin.userActivity', { userId: info.userId, kind, limit: 20, ...(cursor !== undefined ? { cursor } : {}) });
    return {
      items: page.items as Array<Record<string, unknown>>,
      ...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {}),
    };
  });
  main.append(
    creditSection(info.userId, async () => {
      const fresh = await call('admin.getUserInfo', { userId: info.userId, includeUsage: true });
      if (fresh.usage) drawBalances(fresh.usage.balances);
      await (ledger as HTMLElement & { refresh: () => Promise<void> }).refresh();
    }),
  );
  usageCharts(main, analytics);
  main.append(
    ledger,
    budgetSection(usage.budget),
    section(
      'Own provider keys (BYOK)',
      usage.byokProviders.length
        ? h(
            'ul',
            { id: 'byok-providers' },
            usage.byokProviders.map((p) => h('li', {}, `${p}: key stored`)),
          )
        : h('p', { class: 'muted' }, 'No own keys stored.'),
    ),
    section(
      'API keys',
      h(
        'div',
        { id: 'user-api-keys' },
        keys instanceof Error ? errorBox(keys) : keys.length ? keysTable(keys) : h('p', { class: 'muted' }, 'No API keys.'),
      ),
    ),
  );
};

/** Credit tokens: the amount is confirmed before it is sent; one idempotency key per intended credit. */
function creditSection(userId: string, after: () => Promise<void>): HTMLElement {
  const tokens = h('input', { id: 'credit-tokens', type: 'number', min: 1, step: 1, required: true });
  const type = h(
    'select',
    { id: 'credit-type' },
    h('option', { value: 'one_time' }, 'one-time'),
    h('option', { value: 'subscription' }, 'subscription'),
  );
  const status = h('p', { role: 'status', id: 'credit-status' });
  const confirmBox = h('div', { class: 'confirm', hidden: true, id: 'credit-confirm' });
  // The same key for every send of one intended credit: a retried or double-clicked send credits once.
  let idempotencyKey = crypto.randomUUID();
  const send = async () => {
    const n = Number(tokens.value);
    try {
      const r = await call('billing.creditTokens', { userId, tokens: n, type: type.value, idempotencyKey });
      status.textContent = r.applied ? `Credited ${fmt.int(n)} ${type.value} tokens.` : 'Already credited (same request).';
      idempotencyKey = crypto.randomUUID();
      tokens.value = '';
      confirmBox.hidden = true;
      await after();
    } catch (e) {
      clear(status);
      status.appendChild(errorBox(e));
    }
  };
  const form = h(
    'form',
    {
      class: 'row',
      onsubmit: (ev: Event) => {
        ev.preventDefault();
        const n = Number(tokens.value);
        if (!Number.isInteger(n) || n < 1) {
          status.textContent = 'Enter a whole number of tokens (at least 1).';
          return;
        }
        clear(confirmBox);
        confirmBox.append(
          h('p', {}, `Credit ${fmt.int(n)} ${type.value === 'one_time' ? 'one-time' : 'subscription'} tokens to ${userId}?`),
          h('button', { id: 'credit-confirm-yes', class: 'primary', type: 'button', onclick: () => void send() }, 'Confirm credit'),
          h('button', { type: 'button', onclick: () => (confirmBox.hidden = true) }, 'Cancel'),
        );
        confirmBox.hidden = false;
        (confirmBox.querySelector('#credit-confirm-yes') as HTMLButtonElement).focus();
      },
    },
    h('label', { for: 'credit-tokens' }, 'Tokens'),
    tokens,
    h('label', { for: 'credit-type' }, 'Balance'),
    type,
    h('button', { type: 'submit', id: 'credit-submit' }, 'Credit…'),
  );
  return section('Credit tokens', form, confirmBox, status);
}
