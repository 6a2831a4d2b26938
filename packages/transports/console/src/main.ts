import { call } from './api.js';
import { currentToken, finishDevSignIn, finishOAuth, onSignedOut, signOut, startOAuth, useToken, type Settings } from './auth.js';
import { clear, errorBox, h } from './dom.js';
import { alertsView } from './views/alerts.js';
import { explorerView } from './views/explorer.js';
import { liveView } from './views/live.js';
import { mcpView } from './views/mcp.js';
import { meView } from './views/me.js';
import { overviewView } from './views/overview.js';
import { providersView } from './views/providers.js';
import { userView } from './views/user.js';
import { usersView } from './views/users.js';
import type { Me, View } from './view.js';

const ADMIN_VIEWS: Array<[string, string, View]> = [
  ['overview', 'Overview', overviewView],
  ['users', 'Users', usersView],
  ['providers', 'Providers', providersView],
  ['alerts', 'Alerts', alertsView],
  ['mcp', 'MCP', mcpView],
  ['explorer', 'API explorer', explorerView],
  ['live', 'Live', liveView],
];
const USER_VIEWS: Array<[string, string, View]> = [['me', 'My account', meView]];

const root = document.getElementById('app')!;
let stopView: (() => void) | void;
let me: Me | undefined;

function signInPage(settings: Settings, message?: string): void {
  clear(root);
  const tokenBox = h('textarea', {
    id: 'token-input',
    rows: 4,
    placeholder: 'eyJ… (an administrator or user token)',
    autocomplete: 'off',
    spellcheck: 'false',
  });
  const status = h('p', { role: 'status' }, message ?? '');
  root.appendChild(
    h(
      'main',
      { class: 'signin' },
      h('h1', {}, 'ai-backend console'),
      status,
      settings.oauth
        ? h(
            'section',
            { class: 'card' },
            h('h2', {}, 'Sign in'),
            h('p', {}, "Through this server's sign-in (your identity provider)."),
            h(
              'button',
              {
                id: 'oauth-signin',
                class: 'primary',
                onclick: () => void startOAuth(settings).catch((e: Error) => (status.textContent = e.message)),
              },
              'Sign in',
            ),
          )
        : null,
      h(
        'section',
        { class: 'card' },
        h('h2', {}, settings.oauth ? 'Or use a token' : 'Sign in with a token'),
        h(
          'p',
          {},
          'Paste a token (e.g. from ',
          h('code', {}, 'npx ai-backend token --sub you --scope ' + settings.adminScope),
          '). It is kept in this tab only.',
        ),
        h('label', { for: 'token-input' }, 'Token'),
        tokenBox,
        h(
          'button',
          {
            id: 'token-signin',
            onclick: () => {
              const t = tokenBox.value.trim();
              if (!t) return;
              tokenBox.value = '';
              useToken(t);
              void boot(settings);
            },
          },
          'Use token',
        ),
      ),
    ),
  );
}

function shell(views: Array<[string, string, View]>): HTMLElement {
  clear(root);
  const main = h('main', { id: 'view', tabindex: -1 });
  const nav = h(
    'nav',
    { 'aria-label': 'Console' },
    h(
      'ul',
      {},
      views.map(([id, label]) => h('li', {}, h('a', { href: `#/${id}`, 'data-view': id }, label))),
    ),
  );
  root.appendChild(
    h(
      'header',
      {},
      h('span', { class: 'brand' }, 'ai-backend'),
      nav,
      h('span', { class: 'who', id: 'who' }, me ? `${me.email ?? me.userId}${me.isAdmin ? ' (admin)' : ''}` : ''),
      h('button', { id: 'signout', onclick: () => signOut() }, 'Sign out'),
    ),
  );
  root.appendChild(main);
  return main;
}

async function route(): Promise<void> {
  if (!me) return;
  if (typeof stopView === 'function') stopView();
  stopView = undefined;
  const [, name = '', arg] = /^#\/([\w-]*)(?:\/(.+))?$/.exec(location.hash) ?? [];
  const views = me.isAdmin ? [...ADMIN_VIEWS, ...USER_VIEWS] : USER_VIEWS;
  const main = shell(views);
  document
    .querySelectorAll('nav a')
    .forEach((a) =>
      a.toggleAttribute(
        'aria-current',
        a.getAttribute('data-view') === name || (name === 'users' && a.getAttribute('data-view') === 'users'),
      ),
    );
  if (name === 'users' && arg) {
    if (!me.isAdmin) return refuseAdmin(main);
    stopView = await userView(main, me, decodeURIComponent(arg)).catch((e: unknown) => void main.appendChild(errorBox(e)));
    return;
  }
  const found = [...ADMIN_VIEWS, ...USER_VIEWS].find(([id]) => id === name);
  if (!found) {
    location.replace(me.isAdmin ? '#/overview' : '#/me');
    return;
  }
  if (ADMIN_VIEWS.includes(found) && !me.isAdmin) return refuseAdmin(main);
  document.title = `${found[1]} · ai-backend console`;
  stopView = await found[2](main, me, arg).catch((e: unknown) => void main.appendChild(errorBox(e)));
}

/** A non-administrator asked for an administrator view: say so (the server refuses its calls anyway). */
function refuseAdmin(main: HTMLElement): void {
  main.appendChild(
    h(
      'section',
      { class: 'card', id: 'forbidden' },
      h('h1', {}, 'Administrators only'),
      h('p', {}, 'This view needs an administrator. '),
      h('a', { href: '#/me' }, 'Go to your account'),
    ),
  );
}

async function boot(settings: Settings): Promise<void> {
  if (!currentToken()) return signInPage(settings);
  try {
    me = await call('user.getUserProfile');
  } catch (e) {
    return signInPage(settings, e instanceof Error ? `Sign-in failed: ${e.message}` : undefined);
  }
  await route();
}

async function start(): Promise<void> {
  const settings = (await fetch('/console/settings.json').then((r) => r.json())) as Settings;
  onSignedOut((message) => {
    me = undefined;
    signInPage(settings, message);
  });
  window.addEventListener('hashchange', () => void route());
  try {
    (await finishOAuth()) ?? (settings.devSignIn ? await finishDevSignIn() : null);
  } catch (e) {
    return signInPage(settings, e instanceof Error ? e.message : String(e));
  }
  await boot(settings);
}

void start();
