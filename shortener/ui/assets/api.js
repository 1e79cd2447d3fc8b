// The management API, called with the session cookie. Writes carry the
// session's CSRF token; the API key itself never reaches the page's
// storage.

export class APIError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// webhooks: whether the handler has a webhooks block, known once a write
// session asked (undefined until then; read sessions may not ask).
// domains: the link domains the session's key sees, by host (undefined
// until asked, null when the handler has none: a store without domains);
// scoped: the key is scoped to domains (it may not use the default
// domain); domain: the domain the dashboard works on ('' the default).
export const session = { api: '', scope: '', csrf: '', webhooks: undefined, domains: undefined, scoped: false, domain: '' };

async function call(method, url, body, headers = {}) {
  const init = { method, credentials: 'same-origin', headers: { ...headers } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers['Content-Type'] = 'application/json';
  }
  if (method !== 'GET' && method !== 'HEAD' && session.csrf) init.headers['X-CSRF-Token'] = session.csrf;
  let res;
  try {
    res = await fetch(url, init);
  } catch (e) {
    throw new APIError(0, 'the server is unreachable');
  }
  if (res.status === 204) return null;
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
  if (!res.ok) {
    const err = new APIError(res.status, (data && data.error) || `HTTP ${res.status}`);
    if (res.status === 401 && session.scope && onSignedOut) onSignedOut();
    throw err;
  }
  return data;
}

let onSignedOut = null;
export function whenSignedOut(fn) { onSignedOut = fn; }

function setSession(s) {
  session.api = s.api; session.scope = s.scope; session.csrf = s.csrf_token;
  session.webhooks = undefined;
  session.domains = undefined;
  return s;
}

export async function loadSession() {
  try {
    return setSession(await call('GET', 'session'));
  } catch (e) {
    if (e.status === 401) return null;
    throw e;
  }
}

export async function signIn(key) {
  return setSession(await call('POST', 'session', { key }));
}

export async function signOut() {
  await call('DELETE', 'session');
  session.api = session.scope = session.csrf = '';
  session.webhooks = undefined;
  session.domains = undefined;
}

// The chosen domain is kept in the browser (a host name, not a secret),
// and checked against the domains the key sees each time they are read.
const domainStore = 'shortener.domain';

// loadDomains reads the domains the key sees and whether it is scoped
// (its GET <api>/links without a domain answers 403), then picks the
// domain: the one kept if the key still sees it, else the default domain,
// or a scoped key's first domain.
export async function loadDomains() {
  let hosts;
  try {
    hosts = (await call('GET', `${session.api}/domains`)).domains.map((d) => d.host);
  } catch (e) {
    if (e.status !== 404) throw e;
    hosts = null; // no link domains on this store
  }
  let scoped = false;
  if (hosts && hosts.length) {
    try {
      await call('GET', `${session.api}/links?limit=1`);
    } catch (e) {
      if (e.status !== 403) throw e;
      scoped = true;
    }
  }
  session.domains = hosts;
  session.scoped = scoped;
  let kept = '';
  try { kept = localStorage.getItem(domainStore) || ''; } catch { /* storage off */ }
  const choices = domainChoices();
  session.domain = choices.includes(kept) ? kept : choices[0] ?? '';
}

// domainChoices are the domains the dashboard may work on: '' (the
// default domain) unless the key is scoped, then each link domain.
export function domainChoices() {
  return [...(session.scoped ? [] : ['']), ...(session.domains || [])];
}

export function setDomain(host) {
  session.domain = host || '';
  try { localStorage.setItem(domainStore, session.domain); } catch { /* storage off */ }
}

// webhooksOn reports whether the handler serves <api>/webhooks (404 when
// it has no webhooks block); read sessions are refused them, so false.
export async function webhooksOn() {
  if (session.scope !== 'write') return false;
  try {
    await call('GET', `${session.api}/webhooks`);
    return true;
  } catch (e) {
    if (e.status === 404) return false;
    return true; // on, or unknown: the page says what went wrong
  }
}

const enc = encodeURIComponent;
const qs = (params) => {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') p.set(k, v);
  const s = p.toString();
  return s ? '?' + s : '';
};

// dq adds the chosen link domain to a links call's parameters.
const dq = (params) => qs({ ...(params || {}), domain: session.domain });

export const api = {
  list: (params) => call('GET', `${session.api}/links${dq(params)}`),
  get: (code) => call('GET', `${session.api}/links/${enc(code)}${dq()}`),
  create: (link) => call('POST', `${session.api}/links${dq()}`, link),
  edit: (code, patch) => call('PATCH', `${session.api}/links/${enc(code)}${dq()}`, patch),
  revoke: (code) => call('DELETE', `${session.api}/links/${enc(code)}${dq()}`),
  history: (code, params) => call('GET', `${session.api}/links/${enc(code)}/history${dq(params)}`),
  stats: (code, params) => call('GET', `${session.api}/links/${enc(code)}/stats${dq(params)}`),
  preview: (req) => call('POST', `${session.api}/rules/preview`, req),
  overview: (params) => call('GET', `${session.api}/stats${qs(params)}`),
  webhooks: () => call('GET', `${session.api}/webhooks`),
  webhook: (id) => call('GET', `${session.api}/webhooks/${enc(id)}`),
  createWebhook: (ep) => call('POST', `${session.api}/webhooks`, ep),
  editWebhook: (id, patch) => call('PATCH', `${session.api}/webhooks/${enc(id)}`, patch),
  deleteWebhook: (id) => call('DELETE', `${session.api}/webhooks/${enc(id)}`),
  rotateWebhook: (id, graceSeconds) => call('POST', `${session.api}/webhooks/${enc(id)}/rotate`, { grace_seconds: graceSeconds }),
  messages: (id, params) => call('GET', `${session.api}/webhooks/${enc(id)}/messages${qs(params)}`),
  message: (id, msg) => call('GET', `${session.api}/webhooks/${enc(id)}/messages/${enc(msg)}`),
  replayMessage: (id, msg) => call('POST', `${session.api}/webhooks/${enc(id)}/messages/${enc(msg)}/replay`),
  replaySince: (id, since) => call('POST', `${session.api}/webhooks/${enc(id)}/replay`, { since }),
  qrURL: (code, params) => `${session.api}/links/${enc(code)}/qr${dq(params)}`,
  domainList: () => call('GET', `${session.api}/domains`),
  domain: (host) => call('GET', `${session.api}/domains/${enc(host)}`),
  createDomain: (d) => call('POST', `${session.api}/domains`, d),
  editDomain: (host, patch) => call('PATCH', `${session.api}/domains/${enc(host)}`, patch),
  deleteDomain: (host, force) => call('DELETE', `${session.api}/domains/${enc(host)}${qs({ force: force ? 'true' : '' })}`),
};
