// The links list (search, tag, status, sort, cursor paging) and the form
// that creates a link.
import { h, mount, fmt, when, copyText, errorBox } from './dom.js';
import { api, session } from './api.js';

const state = { q: '', tag: '', status: 'active', sort: '-created' };

export async function linksView() {
  const q = h('input', { type: 'search', name: 'q', id: 'q', value: state.q, placeholder: 'code, URL or title' });
  const tag = h('input', { type: 'text', name: 'tag', id: 'tag', value: state.tag, placeholder: 'e.g. print' });
  const status = select('status', state.status, ['active', 'expired', 'revoked', 'exhausted', 'scheduled', 'all']);
  const sort = select('sort', state.sort, [['-created', 'newest first'], ['created', 'oldest first'], ['-clicks', 'most clicks'], ['clicks', 'fewest clicks']]);
  const body = h('tbody');
  const more = h('button', { type: 'button', class: 'plain', hidden: true }, 'Load more');
  const note = h('div', { role: 'status', 'aria-live': 'polite' });
  const table = h('div', { class: 'table-wrap' }, h('table', { class: 'links' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Code'), h('th', {}, 'Destination'), h('th', {}, 'Tags'),
      h('th', { class: 'num' }, 'Clicks'), h('th', {}, 'Created'))), body));
  let cursor = null;

  async function load(reset) {
    if (reset) { body.replaceChildren(); cursor = null; }
    note.replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
    try {
      const page = await api.list({ ...state, cursor, limit: 50 });
      body.append(...page.links.map(row));
      cursor = page.next_cursor;
      more.hidden = !cursor;
      note.replaceChildren();
      if (!body.children.length) note.replaceChildren(emptyState());
    } catch (e) {
      note.replaceChildren(errorBox(e, 'Could not list links'));
    }
  }

  function emptyState() {
    const filtered = state.q || state.tag || state.status !== 'active';
    return h('div', { class: 'empty' }, filtered ? 'No links match these filters. Clear the search or pick another status.'
      : session.scope === 'write' ? h('span', {}, 'No links yet. ', h('a', { href: '#/new' }, 'Create the first one.'))
        : 'No links yet.');
  }

  const form = h('form', { class: 'grid card', role: 'search', onsubmit: (e) => {
    e.preventDefault();
    Object.assign(state, { q: q.value.trim(), tag: tag.value.trim(), status: status.value, sort: sort.value });
    load(true);
  } },
  h('label', { for: 'q' }, 'Search', q), h('label', { for: 'tag' }, 'Tag', tag),
  h('label', { for: 'status' }, 'Status', status), h('label', { for: 'sort' }, 'Sort', sort),
  h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Apply')));
  more.addEventListener('click', () => load(false));
  mount(h('h1', {}, 'Links'), onDomain(), form, table, note, h('div', { class: 'actions' }, more));
  await load(true);
}

// onDomain says which domain's links a page shows, when there are link
// domains.
export function onDomain() {
  return session.domains && session.domains.length
    ? h('p', { class: 'muted', 'data-domain': session.domain }, 'On ', h('b', {}, session.domain || 'the default domain'), '. Pick another in the bar.')
    : null;
}

function row(l) {
  return h('tr', { 'data-code': l.code },
    h('td', {}, h('a', { href: '#/links/' + encodeURIComponent(l.code) }, l.code), ' ',
      h('button', { type: 'button', class: 'plain', 'aria-label': 'Copy ' + l.short_url, onclick: () => copyText(l.short_url) }, 'Copy'),
      l.title ? h('div', { class: 'muted' }, l.title) : null),
    h('td', { class: 'url', title: l.long_url }, l.long_url),
    h('td', {}, (l.tags || []).map((t) => h('span', { class: 'tag' }, t))),
    h('td', { class: 'num' }, l.clicks === undefined ? '—' : fmt.format(l.clicks)),
    h('td', {}, when(l.created_at), l.revoked_at ? h('div', { class: 'status-revoked' }, 'revoked') : null));
}

export function select(name, value, options) {
  return h('select', { name, id: name }, options.map((o) => {
    const [v, label] = Array.isArray(o) ? o : [o, o];
    return h('option', { value: v, selected: v === value }, label);
  }));
}

// linkFields are the inputs a link's form has, shared by create and edit.
export function linkFields(l = {}) {
  const f = {
    long_url: h('input', { type: 'url', name: 'long_url', id: 'long_url', required: true, value: l.long_url || '' }),
    title: h('input', { type: 'text', name: 'title', id: 'title', maxlength: 200, value: l.title || '' }),
    tags: h('input', { type: 'text', name: 'tags', id: 'tags', value: (l.tags || []).join(', '), placeholder: 'print, campaign:spring' }),
    expires_at: h('input', { type: 'datetime-local', name: 'expires_at', id: 'expires_at', value: local(l.expires_at) }),
    notes: h('textarea', { name: 'notes', id: 'notes', maxlength: 2000 }, l.notes || ''),
  };
  const labels = { long_url: 'Destination URL', title: 'Title', tags: 'Tags (comma-separated)', expires_at: 'Expires', notes: 'Notes' };
  return { f, labeled: Object.entries(f).map(([k, el]) => h('label', { for: k }, labels[k], el)) };
}

// fieldValues reads the form's values as the API takes them.
export function fieldValues(f) {
  const tags = f.tags.value.split(',').map((t) => t.trim()).filter(Boolean);
  return {
    long_url: f.long_url.value.trim(),
    title: f.title.value.trim() || null,
    tags: tags.length ? tags : null,
    expires_at: f.expires_at.value ? new Date(f.expires_at.value).toISOString() : null,
    notes: f.notes.value || null,
  };
}

// ruleFields are the per-link rules a new link may carry; empty means the
// handler's default.
function ruleFields() {
  const f = {
    redirect_status: select('redirect_status', '', [['', 'Default'], ['301', '301 Moved Permanently'], ['302', '302 Found'], ['307', '307 Temporary Redirect'], ['308', '308 Permanent Redirect']]),
    valid_from: h('input', { type: 'datetime-local', name: 'valid_from', id: 'valid_from' }),
    max_clicks: h('input', { type: 'number', name: 'max_clicks', id: 'max_clicks', min: 1, max: 1000000000000, step: 1, placeholder: 'no limit' }),
    forward_query: select('forward_query', '', [['', 'Default'], ['true', 'Yes'], ['false', 'No']]),
  };
  const labels = { redirect_status: 'Redirect status', valid_from: 'Valid from', max_clicks: 'Max clicks', forward_query: 'Forward the query string' };
  return { f, labeled: Object.entries(f).map(([k, el]) => h('label', { for: k }, labels[k], el)) };
}

// ruleValues adds the rules set in the form to body.
function ruleValues(f, body) {
  if (f.redirect_status.value) body.redirect_status = Number(f.redirect_status.value);
  if (f.valid_from.value) body.valid_from = new Date(f.valid_from.value).toISOString();
  if (f.max_clicks.value) body.max_clicks = Number(f.max_clicks.value);
  if (f.forward_query.value) body.forward_query = f.forward_query.value === 'true';
}

function local(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

export function newLinkView() {
  if (session.scope !== 'write') {
    mount(h('div', { class: 'empty' }, 'This key is read-only: it cannot create links.'));
    return;
  }
  const { f, labeled } = linkFields();
  const rules = ruleFields();
  const code = h('input', { type: 'text', name: 'code', id: 'code', pattern: '[A-Za-z0-9_\\-]{3,64}', placeholder: 'generated' });
  const err = h('p', { class: 'error', role: 'alert' });
  const button = h('button', { type: 'submit' }, 'Create link');
  const form = h('form', { class: 'grid card', onsubmit: async (e) => {
    e.preventDefault();
    button.disabled = true;
    err.textContent = '';
    const v = fieldValues(f);
    const body = { long_url: v.long_url };
    for (const k of ['title', 'tags', 'expires_at', 'notes']) if (v[k] !== null) body[k] = v[k];
    if (code.value.trim()) body.code = code.value.trim();
    ruleValues(rules.f, body);
    try {
      const l = await api.create(body);
      location.hash = '#/links/' + encodeURIComponent(l.code);
    } catch (ex) {
      err.textContent = ex.message;
      button.disabled = false;
    }
  } }, labeled[0], h('label', { for: 'code' }, 'Custom code (optional)', code), labeled.slice(1),
  h('fieldset', { class: 'grid' }, h('legend', {}, 'Rules'), rules.labeled), err,
  h('div', { class: 'actions' }, button));
  mount(h('h1', {}, 'New link'), onDomain(), form);
  f.long_url.focus();
}
