// Link domains (issue 37), for write sessions whose key is not scoped to
// domains: the domains, the form that creates one, and a domain's page
// (edit, delete; a domain with links is deleted only with them revoked).
import { h, mount, when, errorBox, toast, markField } from './dom.js';
import { api, session } from './api.js';

const words = (s) => s.split(/[\s,]+/).map((t) => t.trim()).filter(Boolean);
const domainHash = (host) => '#/domains/' + encodeURIComponent(host);

// refused answers what a page shows when it may not manage domains, null
// when it may.
function refused() {
  if (session.scope !== 'write') return h('div', { class: 'empty' }, 'Link domains need a write key: this session is read-only.');
  if (session.domains === null) return h('div', { class: 'empty' }, 'Link domains need the postgres or embedded store.');
  if (session.scoped) return h('div', { class: 'empty' }, 'This key is scoped to link domains: it may not manage them.');
  return null;
}

// domainsChanged has the domain picker read the domains again.
function domainsChanged() {
  session.domains = undefined;
}

export async function domainsView() {
  const no = refused();
  if (no) return mount(h('h1', {}, 'Domains'), no);
  mount(h('p', { class: 'muted' }, 'Loading…'));
  let ds;
  try {
    ds = (await api.domainList()).domains;
  } catch (e) {
    return mount(h('h1', {}, 'Domains'), errorBox(e, 'Could not list the link domains'));
  }
  const rows = ds.map((d) => h('tr', { 'data-host': d.host },
    h('td', { 'data-label': 'Host', class: 'wrap' }, h('a', { href: domainHash(d.host) }, d.host)),
    h('td', { 'data-label': 'Redirects', class: 'wrap' }, redirects(d)),
    h('td', { 'data-label': 'Keys' }, (d.keys || []).length ? d.keys.map((k) => h('span', { class: 'tag mono' }, k)) : 'every key'),
    h('td', { 'data-label': 'Created' }, when(d.created_at))));
  mount(h('h1', {}, 'Domains'),
    h('p', { class: 'muted' }, 'Link domains are host names with codes of their own. Point the name\'s DNS at this server: its certificate is issued on its first visit.'),
    h('div', { class: 'actions' }, h('a', { class: 'button', href: '#/domains/new' }, 'New domain')),
    ds.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'stack domains' },
      h('thead', {}, h('tr', {}, h('th', {}, 'Host'), h('th', {}, 'Redirects'), h('th', {}, 'Keys'), h('th', {}, 'Created'))),
      h('tbody', {}, rows)))
      : h('div', { class: 'empty' }, 'No link domains yet: links live on the default domain. ', h('a', { href: '#/domains/new' }, 'Add the first one.')));
}

function redirects(d) {
  const out = [];
  if (d.root_redirect) out.push(h('div', {}, '/ → ', d.root_redirect));
  if (d.not_found_redirect) out.push(h('div', {}, 'not found → ', d.not_found_redirect));
  return out.length ? out : h('span', { class: 'muted' }, 'the handler\'s');
}

const json = (v) => (v === null || v === undefined ? '' : JSON.stringify(v, null, 2));

// domainFields are the inputs of a domain's form, shared by create and
// edit (host only on create); each carries the path the API's errors name.
function domainFields(d = {}, create = false) {
  const f = {
    host: create ? h('input', { type: 'text', name: 'host', id: 'dm_host', required: true, spellcheck: 'false', placeholder: 'go.example.com' }) : null,
    root_redirect: h('input', { type: 'url', name: 'root_redirect', id: 'dm_root_redirect', value: d.root_redirect || '', placeholder: 'the handler\'s' }),
    not_found_redirect: h('input', { type: 'url', name: 'not_found_redirect', id: 'dm_not_found_redirect', value: d.not_found_redirect || '', placeholder: 'the handler\'s' }),
    keys: h('textarea', { name: 'keys', id: 'dm_keys', rows: 2, spellcheck: 'false', class: 'mono', placeholder: 'every key' }, (d.keys || []).join('\n')),
    apple_app_site_association: h('textarea', { name: 'apple_app_site_association', id: 'dm_aasa', rows: 3, spellcheck: 'false', class: 'mono', placeholder: 'the handler\'s' }, json(d.apple_app_site_association)),
    assetlinks: h('textarea', { name: 'assetlinks', id: 'dm_assetlinks', rows: 3, spellcheck: 'false', class: 'mono', placeholder: 'the handler\'s' }, json(d.assetlinks)),
  };
  if (!f.host) delete f.host;
  for (const [k, el] of Object.entries(f)) el.dataset.path = k;
  const labels = { host: 'Host name', root_redirect: 'Redirect for / (root)', not_found_redirect: 'Redirect for unknown codes',
    keys: 'Scoped keys: fingerprints of the API keys that see only their domains (one a line)',
    apple_app_site_association: 'apple-app-site-association (JSON)', assetlinks: 'assetlinks.json (JSON)' };
  const wide = ['host', 'keys', 'apple_app_site_association', 'assetlinks'];
  const labeled = Object.entries(f).map(([k, el]) => h('label', { for: el.id, class: wide.includes(k) ? 'wide' : null }, labels[k], el));
  labeled.splice(labeled.length - 2, 0, h('p', { class: 'muted wide' },
    'A key\'s fingerprint: printf %s "$KEY" | sha256sum | cut -c1-16. A key named by a domain sees only the domains naming it.'));
  // read gives the values, null for those left empty; a JSON field that
  // does not parse throws an error naming it.
  const read = () => {
    const v = {
      root_redirect: f.root_redirect.value.trim() || null,
      not_found_redirect: f.not_found_redirect.value.trim() || null,
      keys: words(f.keys.value),
    };
    if (f.host) v.host = f.host.value.trim();
    for (const k of ['apple_app_site_association', 'assetlinks']) {
      const t = f[k].value.trim();
      try {
        v[k] = t ? JSON.parse(t) : null;
      } catch {
        throw new Error(`${k}: not JSON`);
      }
    }
    return v;
  };
  return { f, labeled, read };
}

export function newDomainView() {
  const no = refused();
  if (no) return mount(h('h1', {}, 'New link domain'), no);
  const { f, labeled, read } = domainFields({}, true);
  const err = h('p', { class: 'error', role: 'alert' });
  const button = h('button', { type: 'submit' }, 'Create domain');
  const form = h('form', { class: 'grid card', onsubmit: async (ev) => {
    ev.preventDefault();
    button.disabled = true;
    err.textContent = '';
    try {
      const v = read();
      const body = { host: v.host };
      for (const k of ['root_redirect', 'not_found_redirect', 'apple_app_site_association', 'assetlinks']) if (v[k] !== null) body[k] = v[k];
      if (v.keys.length) body.keys = v.keys;
      const d = await api.createDomain(body);
      domainsChanged();
      toast('Domain created: ' + d.host);
      location.hash = domainHash(d.host);
    } catch (ex) {
      err.textContent = ex.message;
      markField(form, ex.message);
      button.disabled = false;
    }
  } }, labeled, err, h('div', { class: 'actions' }, button));
  mount(h('h1', {}, 'New link domain'), form);
  f.host.focus();
}

export async function domainView(host) {
  const no = refused();
  if (no) return mount(h('h1', {}, 'Link domain'), no);
  mount(h('p', { class: 'muted' }, 'Loading…'));
  let d;
  try {
    d = await api.domain(host);
  } catch (ex) {
    mount(ex.status === 404 ? h('div', { class: 'empty' }, `No link domain ${host}. `, h('a', { href: '#/domains' }, 'Back to the domains.'))
      : errorBox(ex, 'Could not load the domain'));
    return;
  }
  mount(h('h1', {}, d.host), details(d), editor(d));
}

// details shows the domain with its delete button: a domain with links
// (409) offers to revoke them and delete it.
function details(d) {
  const err = h('p', { class: 'error', role: 'alert' });
  const force = h('button', { type: 'button', class: 'danger', hidden: true, onclick: async () => {
    if (!confirm(`Revoke every link of ${d.host} and delete it? The links answer 410 Gone.`)) return;
    await remove(true);
  } }, 'Revoke its links and delete');
  async function remove(withLinks) {
    try {
      await api.deleteDomain(d.host, withLinks);
      domainsChanged();
      toast('Domain deleted: ' + d.host);
      location.hash = '#/domains';
    } catch (ex) {
      err.textContent = ex.message;
      force.hidden = ex.status !== 409;
    }
  }
  const del = h('button', { type: 'button', class: 'danger', onclick: async () => {
    if (!confirm(`Delete the link domain ${d.host}? It stops answering and gets no new certificate.`)) return;
    await remove(false);
  } }, 'Delete');
  return h('div', { class: 'card' },
    h('dl', { class: 'meta' },
      h('dt', {}, 'Host'), h('dd', {}, d.host),
      h('dt', {}, 'Redirects'), h('dd', {}, redirects(d)),
      h('dt', {}, 'Keys'), h('dd', { 'data-k': 'keys' }, (d.keys || []).length ? d.keys.join(', ') : 'every key'),
      h('dt', {}, 'App links'), h('dd', {}, [d.apple_app_site_association ? 'apple-app-site-association' : null,
        d.assetlinks ? 'assetlinks.json' : null].filter(Boolean).join(', ') || 'the handler\'s'),
      h('dt', {}, 'Created'), h('dd', {}, when(d.created_at)),
      h('dt', {}, 'Updated'), h('dd', {}, when(d.updated_at))),
    err, h('div', { class: 'actions' }, del, force));
}

function editor(d) {
  const { labeled, read } = domainFields(d);
  const err = h('p', { class: 'error', role: 'alert' });
  const save = h('button', { type: 'submit' }, 'Save changes');
  const form = h('form', { class: 'grid card', onsubmit: async (ev) => {
    ev.preventDefault();
    save.disabled = true;
    err.textContent = '';
    try {
      const v = read();
      await api.editDomain(d.host, { ...v, keys: v.keys.length ? v.keys : null });
      toast('Saved');
      domainView(d.host);
    } catch (ex) {
      err.textContent = ex.message;
      markField(form, ex.message);
      save.disabled = false;
    }
  } }, labeled, err, h('div', { class: 'actions' }, save));
  return h('section', { 'aria-labelledby': 'edit-h' }, h('h2', { id: 'edit-h' }, 'Edit'), form);
}
