/**
 * A few DOM helpers instead of a UI framework: the console's views are forms, lists and charts
 * that are rebuilt on each navigation. Text is always set as text (never HTML), so nothing the
 * server returns can become markup.
 */
type Child = Node | string | number | null | undefined | false | Child[];
type Attrs = Record<string, string | number | boolean | null | undefined | ((ev: Event) => void)>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === 'function') el.addEventListener(name.slice(2).toLowerCase(), value);
    else if (value === true) el.setAttribute(name, '');
    else el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

export function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

export const fmt = {
  int: (n: number | null | undefined) => (n === null || n === undefined ? '–' : Math.round(n).toLocaleString('en-US')),
  usd: (n: number | null | undefined) => (n === null || n === undefined ? '–' : `$${n < 1 && n > 0 ? n.toFixed(6) : n.toFixed(2)}`),
  ms: (n: number | null | undefined) => (n === null || n === undefined ? '–' : `${Math.round(n)} ms`),
  time: (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '–'),
};

/** A figure with a label: the console's key numbers. `id` lets tests and links find it. */
export function stat(label: string, value: string, id?: string): HTMLElement {
  return h(
    'div',
    { class: 'stat' },
    h('span', { class: 'stat-label' }, label),
    h('span', { class: 'stat-value', id, 'data-stat': label }, value),
  );
}

/** A plain table from rows; cells are text. */
export function table(headers: string[], rows: Array<Array<string | number | Node>>, caption?: string): HTMLTableElement {
  return h(
    'table',
    {},
    caption ? h('caption', {}, caption) : null,
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        headers.map((x) => h('th', { scope: 'col' }, x)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.map((r) =>
        h(
          'tr',
          {},
          r.map((c) => h('td', {}, c)),
        ),
      ),
    ),
  );
}

/** A section with a heading. */
export function section(title: string, ...children: Child[]): HTMLElement {
  return h('section', { class: 'card' }, h('h2', {}, title), ...children);
}

export function errorBox(err: unknown): HTMLElement {
  return h('p', { class: 'error', role: 'alert' }, err instanceof Error ? err.message : String(err));
}

/** Pretty JSON as text (for answers the explorer and MCP views show). */
export function jsonBlock(value: unknown): HTMLElement {
  return h('pre', { class: 'json' }, JSON.stringify(value, null, 2));
}

/** How a figure counted by this process alone (since it started) is labelled, everywhere in the console. */
export const THIS_PROCESS = 'this instance, since it started';
