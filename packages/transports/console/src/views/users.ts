import { rpc } from '../api.js';
import { clear, errorBox, fmt, h, section, table } from '../dom.js';
import type { View } from '../main.js';

interface Found {
  userId: string;
  email: string | null;
  lastSeenAt: string | null;
  isAdmin: boolean;
  balances: { subscription: number; one_time: number };
}

/** Users: search by id, id prefix or e-mail (admin.findUsers); a result opens the user's view. */
export const usersView: View = async (main, _me, arg) => {
  main.appendChild(h('h1', {}, 'Users'));
  const results = h('div', { id: 'user-results' });
  const input = h('input', { id: 'user-search', type: 'search', placeholder: 'user id, id prefix or e-mail', autocomplete: 'off', value: arg ?? '' });
  const search = async (ev?: Event) => {
    ev?.preventDefault();
    const query = input.value.trim();
    clear(results);
    if (!query) return;
    try {
      const { users } = await rpc<{ users: Found[] }>('admin.findUsers', { query });
      results.appendChild(
        users.length
          ? table(
              ['user', 'e-mail', 'subscription', 'one-time', 'admin', 'last seen'],
              users.map((u) => [h('a', { href: `#/users/${encodeURIComponent(u.userId)}` }, u.userId), u.email ?? '–', fmt.int(u.balances.subscription), fmt.int(u.balances.one_time), u.isAdmin ? 'yes' : 'no', fmt.time(u.lastSeenAt)]),
            )
          : h('p', { class: 'muted' }, 'No user found.'),
      );
    } catch (e) {
      results.appendChild(errorBox(e));
    }
  };
  main.appendChild(
    section('Search', h('form', { class: 'row', role: 'search', onsubmit: search }, h('label', { for: 'user-search', class: 'sr-only' }, 'Search users'), input, h('button', { type: 'submit', class: 'primary' }, 'Search')), results),
  );
  input.focus();
  if (arg) await search();
};
