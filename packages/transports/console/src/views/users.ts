import { call } from '../api.js';
import { clear, errorBox, fmt, h, section } from '../dom.js';
import type { View } from '../view.js';

/**
 * Users: the most recent users first (an empty search), then search by any part of an id or
 * e-mail, ignoring case (admin.findUsers); a result opens the user's view. A search examines a
 * bounded slice of the user index: "More" goes on.
 */
export const usersView: View = async (main, _me, arg) => {
  main.appendChild(h('h1', {}, 'Users'));
  const results = h('div', { id: 'user-results' });
  const input = h('input', {
    id: 'user-search',
    type: 'search',
    placeholder: 'part of a user id or e-mail',
    autocomplete: 'off',
    value: arg ?? '',
  });
  const rows = h('tbody', {});
  const status = h('p', { class: 'muted', role: 'status', id: 'user-status' });
  const more = h('button', { type: 'button', id: 'user-more', hidden: true }, 'More');
  let query = '';
  let cursor: number | undefined;
  let shown = new Set<string>();
  const page = async () => {
    try {
      const r = await call('admin.findUsers', { query, ...(cursor !== undefined ? { cursor } : {}) });
      for (const u of r.users) {
        if (shown.has(u.userId)) continue;
        shown.add(u.userId);
        rows.appendChild(
          h(
            'tr',
            {},
            [
              h('a', { href: `#/users/${encodeURIComponent(u.userId)}` }, u.userId),
              u.email ?? '–',
              fmt.int(u.balances.subscription),
              fmt.int(u.balances.one_time),
              u.isAdmin ? 'yes' : 'no',
              fmt.time(u.lastSeenAt),
            ].map((c) => h('td', {}, c)),
          ),
        );
      }
      cursor = r.nextCursor;
      more.hidden = cursor === undefined;
      const found = query
        ? `${shown.size} user${shown.size === 1 ? '' : 's'} found`
        : `the ${shown.size} most recent user${shown.size === 1 ? '' : 's'}`;
      status.textContent =
        shown.size === 0
          ? cursor === undefined
            ? query
              ? 'No user found.'
              : 'No user yet.'
            : 'None yet in the most recent users: More searches older ones.'
          : `${found}${cursor === undefined ? '.' : ' so far.'}`;
    } catch (e) {
      results.appendChild(errorBox(e));
    }
  };
  const search = async (ev?: Event) => {
    ev?.preventDefault();
    query = input.value.trim();
    cursor = undefined;
    shown = new Set();
    clear(results);
    clear(rows);
    more.hidden = true;
    status.textContent = '';
    // An empty search lists the most recent users: the page is never blank.
    results.append(
      h(
        'table',
        {},
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['user', 'e-mail', 'subscription', 'one-time', 'admin', 'last seen'].map((x) => h('th', { scope: 'col' }, x)),
          ),
        ),
        rows,
      ),
      status,
      more,
    );
    await page();
  };
  more.addEventListener('click', () => void page());
  main.appendChild(
    section(
      'Search',
      h(
        'form',
        { class: 'row', role: 'search', onsubmit: search },
        h('label', { for: 'user-search', class: 'sr-only' }, 'Search users'),
        input,
        h('button', { type: 'submit', class: 'primary' }, 'Search'),
      ),
      results,
    ),
  );
  input.focus();
  await search();
};
