// The dashboard: a hash router over views. #/links, #/new, #/links/<code>,
// #/overview, #/webhooks[/new, /<id>, /<id>/messages/<msg>] (write
// sessions of a handler with webhooks), #/domains[/new, /<host>] (write
// sessions whose key is not scoped to domains); the sign-in page whenever
// there is no session. The bar's domain picker chooses the link domain
// every links call names.
import { h, mount, errorBox } from './dom.js';
import { session, loadSession, signIn, signOut, whenSignedOut, webhooksOn, loadDomains, domainChoices, setDomain } from './api.js';
import { linksView, newLinkView } from './links.js';
import { linkView } from './link.js';
import { overviewView } from './overview.js';
import { webhooksView, newWebhookView, webhookView, messageView } from './webhooks.js';
import { domainsView, newDomainView, domainView } from './domains.js';

const bar = document.querySelector('.bar');

function showBar(on) {
  bar.hidden = !on;
  bar.querySelector('.scope').hidden = session.scope !== 'read';
  for (const el of document.querySelectorAll('[data-write]')) el.hidden = session.scope !== 'write';
  bar.querySelector('[data-webhooks]').hidden = !session.webhooks;
  bar.querySelector('[data-domains]').hidden = !(on && session.scope === 'write' && session.domains && !session.scoped);
  bar.querySelector('[data-overview]').hidden = session.scoped; // the overview spans every domain
  showPicker(on);
}

// showPicker fills the domain picker with the domains the key may work
// on; it is hidden while there is no choice but the default domain.
function showPicker(on) {
  const pick = bar.querySelector('.domain-pick');
  const sel = pick.querySelector('select');
  const choices = on ? domainChoices() : [];
  pick.hidden = !on || !session.domains || (choices.length < 2 && choices[0] === '');
  sel.replaceChildren(...choices.map((host) => h('option', { value: host, selected: host === session.domain }, host || 'default domain')));
}

function signInView(message) {
  showBar(false);
  const key = h('input', { type: 'password', name: 'key', autocomplete: 'current-password', required: true, id: 'key' });
  const err = h('p', { class: 'error', role: 'alert' }, message || '');
  const button = h('button', { type: 'submit' }, 'Sign in');
  const form = h('form', { class: 'card signin', onsubmit: async (e) => {
    e.preventDefault();
    button.disabled = true;
    err.textContent = '';
    try {
      await signIn(key.value);
      key.value = '';
      route();
    } catch (ex) {
      err.textContent = ex.status === 401 ? 'That key is not valid here. Check it and try again.'
        : ex.status === 429 ? 'Too many attempts: wait a few seconds, then try again.' : ex.message;
      button.disabled = false;
      key.focus();
    }
  } },
  h('h1', {}, 'Sign in'),
  h('p', { class: 'muted' }, 'Use an API key of this shortener. A read key opens a read-only dashboard. The key is not kept in the browser.'),
  h('label', { for: 'key' }, 'API key', key), err, h('div', { class: 'actions' }, button));
  mount(form);
  key.focus();
}

const routes = [
  [/^#\/links\/([^/]+)$/, (m) => linkView(decodeURIComponent(m[1]))],
  [/^#\/new$/, () => newLinkView()],
  [/^#\/overview$/, () => overviewView()],
  [/^#\/links$/, () => linksView()],
  [/^#\/webhooks$/, () => webhooksView()],
  [/^#\/webhooks\/new$/, () => newWebhookView()],
  [/^#\/webhooks\/([^/]+)$/, (m) => webhookView(decodeURIComponent(m[1]))],
  [/^#\/domains$/, () => domainsView()],
  [/^#\/domains\/new$/, () => newDomainView()],
  [/^#\/domains\/([^/]+)$/, (m) => domainView(decodeURIComponent(m[1]))],
  [/^#\/webhooks\/([^/]+)\/messages\/([^/]+)$/, (m) => messageView(decodeURIComponent(m[1]), decodeURIComponent(m[2]))],
];

async function route() {
  if (!session.scope) {
    try {
      if (!(await loadSession())) return signInView();
    } catch (e) {
      return mount(errorBox(e, 'Could not reach the dashboard'));
    }
  }
  if (session.webhooks === undefined) session.webhooks = await webhooksOn();
  if (session.domains === undefined) {
    try {
      await loadDomains();
    } catch (e) {
      showBar(true);
      return mount(errorBox(e, 'Could not list the link domains'));
    }
  }
  showBar(true);
  const hash = location.hash || '#/links';
  for (const a of bar.querySelectorAll('nav a')) {
    if (hash.startsWith(a.getAttribute('href'))) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  for (const [re, view] of routes) {
    const m = hash.match(re);
    if (m) {
      await view(m);
      document.getElementById('main').focus({ preventScroll: true });
      return;
    }
  }
  location.hash = '#/links';
}

bar.querySelector('.signout').addEventListener('click', async () => {
  try { await signOut(); } catch { /* the cookie is cleared either way */ }
  signInView('Signed out.');
});
whenSignedOut(() => { session.scope = ''; signInView('Your session has ended: sign in again.'); });
// Another domain: a link's page belongs to the old one, so back to the
// list; any other page is shown again.
bar.querySelector('.domain-pick select').addEventListener('change', (e) => {
  setDomain(e.target.value);
  if (location.hash.startsWith('#/links/')) location.hash = '#/links';
  else route();
});
window.addEventListener('hashchange', route);
route();
