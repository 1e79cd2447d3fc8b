// Webhooks (issue 36), for write sessions: the endpoints, the form that
// creates one (its secret shown once), an endpoint's page (enable or
// disable, edit, rotate its secret, delete, its messages, replay since a
// time), and one message's body and attempts with replay.
import { h, mount, fmt, when, copyText, errorBox, toast, markField } from './dom.js';
import { api, session } from './api.js';
import { select } from './links.js';

// The event types, in the order the API documents them.
const types = [
  ['link.created', 'Link created'], ['link.updated', 'Link updated'], ['link.revoked', 'Link revoked'],
  ['link.expired', 'Link expired'], ['link.max_clicks_reached', 'Link used up (max clicks)'], ['click', 'Click'],
  ['ratelimit.exceeded', 'Rate limit exceeded'], ['ratelimit.ban_set', 'Rate limit ban set'],
  ['ratelimit.threshold', 'Rate limit threshold'],
];

// The grace periods a rotated-out secret may keep signing for.
const graces = [['86400', 'one day'], ['3600', 'one hour'], ['604800', 'one week'], ['0', 'no time: stop at once']];

const words = (s) => s.split(',').map((t) => t.trim()).filter(Boolean);
const epHash = (id) => '#/webhooks/' + encodeURIComponent(id);

// refused answers what a page shows when it may not or cannot list
// webhooks, null when it can.
function refused() {
  if (session.scope !== 'write') return h('div', { class: 'empty' }, 'Webhooks need a write key: this session is read-only.');
  if (session.webhooks === false) return h('div', { class: 'empty' }, 'Webhooks are off: the shortener has no webhooks block.');
  return null;
}

// status is an endpoint's state as text: enabled, or disabled and why.
function status(e) {
  return e.disabled ? h('span', { class: 'status-revoked' }, 'disabled', e.disabled_reason ? ': ' + e.disabled_reason : '')
    : h('span', { class: 'status-active' }, 'enabled');
}

const typeTags = (list) => (list || []).map((t) => h('span', { class: 'tag' }, t));

export async function webhooksView() {
  const no = refused();
  if (no) return mount(h('h1', {}, 'Webhooks'), no);
  mount(h('p', { class: 'muted' }, 'Loading…'));
  let eps;
  try {
    eps = (await api.webhooks()).endpoints;
  } catch (e) {
    if (e.status === 404) {
      session.webhooks = false;
      return webhooksView();
    }
    return mount(h('h1', {}, 'Webhooks'), errorBox(e, 'Could not list the webhook endpoints'));
  }
  const rows = eps.map((e) => h('tr', { 'data-id': e.id },
    h('td', { 'data-label': 'URL', class: 'wrap' }, h('a', { href: epHash(e.id) }, e.url),
      e.description ? h('div', { class: 'muted' }, e.description) : null),
    h('td', { 'data-label': 'Types' }, typeTags(e.types)),
    h('td', { 'data-label': 'Status' }, status(e)),
    h('td', { 'data-label': 'Created' }, when(e.created_at))));
  mount(h('h1', {}, 'Webhooks'),
    h('p', { class: 'muted' }, 'Endpoints get the events they subscribe to as signed POSTs (Standard Webhooks), at least once.'),
    h('div', { class: 'actions' }, h('a', { class: 'button', href: '#/webhooks/new' }, 'New endpoint')),
    eps.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'stack webhooks' },
      h('thead', {}, h('tr', {}, h('th', {}, 'URL'), h('th', {}, 'Types'), h('th', {}, 'Status'), h('th', {}, 'Created'))),
      h('tbody', {}, rows)))
      : h('div', { class: 'empty' }, 'No endpoints yet. ', h('a', { href: '#/webhooks/new' }, 'Create the first one.')));
}

// endpointFields are the inputs of an endpoint's form, shared by create
// and edit; each carries the path the API's errors name.
function endpointFields(e = {}) {
  const boxes = types.map(([v, label]) => h('label', { class: 'check' },
    h('input', { type: 'checkbox', name: 'types', value: v, checked: (e.types || []).includes(v) }), label));
  const f = {
    url: h('input', { type: 'url', name: 'url', id: 'wh_url', required: true, value: e.url || '', placeholder: 'https://' }),
    description: h('input', { type: 'text', name: 'description', id: 'wh_description', maxlength: 1024, value: e.description || '' }),
    types: h('fieldset', { class: 'checks wide' }, h('legend', {}, 'Event types'), boxes),
    tags: h('input', { type: 'text', name: 'tags', id: 'wh_tags', value: (e.tags || []).join(', '), placeholder: 'any tag' }),
    codes: h('input', { type: 'text', name: 'codes', id: 'wh_codes', value: (e.codes || []).join(', '), placeholder: 'any code' }),
    batch: h('input', { type: 'number', name: 'batch', id: 'wh_batch', min: 0, max: 1000, step: 1, value: e.batch || '', placeholder: 'one click a message' }),
    batch_wait_ms: h('input', { type: 'number', name: 'batch_wait_ms', id: 'wh_batch_wait_ms', min: 0, max: 60000, step: 1, value: e.batch_wait_ms || '', placeholder: '0' }),
  };
  for (const [k, el] of Object.entries(f)) el.dataset.path = k;
  const labels = { url: 'Endpoint URL', description: 'Description', tags: 'Only links with one of these tags (comma-separated)',
    codes: 'Only links with one of these codes (comma-separated)', batch: 'Clicks per message (batch, up to 1000)',
    batch_wait_ms: 'Send a batch at most this long after its first click (ms)' };
  const labeled = Object.entries(f).map(([k, el]) => (k === 'types' ? el : h('label', { for: el.id, class: k === 'url' || k === 'description' ? 'wide' : null }, labels[k], el)));
  const read = () => ({
    url: f.url.value.trim(),
    description: f.description.value.trim(),
    types: boxes.map((b) => b.firstChild).filter((c) => c.checked).map((c) => c.value),
    tags: words(f.tags.value),
    codes: words(f.codes.value),
    batch: Number(f.batch.value) || 0,
    batch_wait_ms: Number(f.batch_wait_ms.value) || 0,
  });
  return { f, labeled, read };
}

// secretBox shows a signing secret, this once, with a copy button.
function secretBox(secret, heading) {
  const input = h('input', { type: 'text', id: 'wh_secret', readonly: true, value: secret, spellcheck: 'false', class: 'mono',
    onfocus: (e) => e.target.select() });
  return h('section', { class: 'card secret', 'aria-labelledby': 'secret-h' },
    h('h2', { id: 'secret-h' }, heading),
    h('p', { class: 'warning' }, h('strong', {}, 'Shown this once. '),
      'Copy it now into the receiver\'s configuration: it verifies the webhook-signature header of every message. The dashboard cannot show it again; rotate it if it is lost.'),
    h('label', { for: 'wh_secret' }, 'Signing secret', input),
    h('div', { class: 'actions' }, h('button', { type: 'button', onclick: () => copyText(secret, 'the signing secret') }, 'Copy secret')));
}

export function newWebhookView() {
  const no = refused();
  if (no) return mount(h('h1', {}, 'New webhook endpoint'), no);
  const { f, labeled, read } = endpointFields({ types: ['link.created'] });
  const disabled = h('input', { type: 'checkbox', name: 'disabled', id: 'wh_disabled' });
  const err = h('p', { class: 'error', role: 'alert' });
  const button = h('button', { type: 'submit' }, 'Create endpoint');
  const form = h('form', { class: 'grid card', onsubmit: async (ev) => {
    ev.preventDefault();
    button.disabled = true;
    err.textContent = '';
    const v = read();
    const body = { url: v.url, types: v.types };
    for (const k of ['description', 'batch', 'batch_wait_ms']) if (v[k]) body[k] = v[k];
    for (const k of ['tags', 'codes']) if (v[k].length) body[k] = v[k];
    if (disabled.checked) body.disabled = true;
    try {
      const e = await api.createWebhook(body);
      mount(h('h1', {}, 'Endpoint created'), secretBox(e.secret, 'Its signing secret'),
        h('div', { class: 'actions' }, h('a', { class: 'button', href: epHash(e.id) }, 'Open the endpoint'),
          h('a', { href: '#/webhooks' }, 'Back to the webhooks')));
      document.getElementById('wh_secret').focus();
    } catch (ex) {
      err.textContent = ex.message;
      markField(form, ex.message);
      button.disabled = false;
    }
  } }, labeled, h('label', { class: 'check', for: 'wh_disabled' }, disabled, 'Create it disabled'), err,
  h('div', { class: 'actions' }, button));
  mount(h('h1', {}, 'New webhook endpoint'), form);
  f.url.focus();
}

export async function webhookView(id) {
  const no = refused();
  if (no) return mount(h('h1', {}, 'Webhook endpoint'), no);
  mount(h('p', { class: 'muted' }, 'Loading…'));
  let e;
  try {
    e = await api.webhook(id);
  } catch (ex) {
    mount(ex.status === 404 ? h('div', { class: 'empty' }, `No webhook endpoint ${id}. `, h('a', { href: '#/webhooks' }, 'Back to the webhooks.'))
      : errorBox(ex, 'Could not load the endpoint'));
    return;
  }
  const secret = h('div');
  mount(h('h1', {}, e.url), details(e, secret), secret, editor(e), messagesSection(e));
}

// details shows the endpoint with its actions: enable or disable, rotate
// the secret (the new one goes in secretAt), delete.
function details(e, secretAt) {
  const err = h('p', { class: 'error', role: 'alert' });
  const keys = e.keys || [];
  const older = keys.filter((k) => k.until);
  const toggle = h('button', { type: 'button', class: e.disabled ? null : 'plain', onclick: async () => {
    toggle.disabled = true;
    try {
      await api.editWebhook(e.id, { disabled: !e.disabled });
      toast(e.disabled ? 'Enabled' : 'Disabled');
      webhookView(e.id);
    } catch (ex) { err.textContent = ex.message; toggle.disabled = false; }
  } }, e.disabled ? 'Enable' : 'Disable');
  const grace = select('wh_grace', '86400', graces);
  const rotate = h('button', { type: 'button', class: 'plain', onclick: async () => {
    if (grace.value === '0' && !confirm('Rotate now? Receivers that still use the current secret fail every message until they switch.')) return;
    rotate.disabled = true;
    err.textContent = '';
    try {
      const r = await api.rotateWebhook(e.id, Number(grace.value));
      secretAt.replaceChildren(secretBox(r.secret, 'Its new signing secret'));
      document.getElementById('wh_secret').focus();
      toast('Secret rotated');
    } catch (ex) { err.textContent = ex.message; }
    rotate.disabled = false;
  } }, 'Rotate secret');
  const del = h('button', { type: 'button', class: 'danger', onclick: async () => {
    if (!confirm(`Delete the endpoint ${e.url}? Its messages and their attempts go with it.`)) return;
    try {
      await api.deleteWebhook(e.id);
      toast('Endpoint deleted');
      location.hash = '#/webhooks';
    } catch (ex) { err.textContent = ex.message; }
  } }, 'Delete');
  return h('div', { class: 'card' },
    h('dl', { class: 'meta' },
      h('dt', {}, 'URL'), h('dd', {}, e.url),
      e.description ? [h('dt', {}, 'Description'), h('dd', {}, e.description)] : null,
      h('dt', {}, 'Status'), h('dd', { 'data-k': 'status' }, status(e)),
      h('dt', {}, 'Types'), h('dd', {}, typeTags(e.types)),
      h('dt', {}, 'Filters'), h('dd', {}, filters(e)),
      h('dt', {}, 'Clicks'), h('dd', {}, e.batch > 1 ? `in batches of up to ${fmt.format(e.batch)}, sent ${fmt.format(e.batch_wait_ms)} ms after the first at most` : 'one a message'),
      h('dt', {}, 'Signing'), h('dd', {}, 'the current secret', older.length ? `; ${older.length} older one${older.length > 1 ? 's' : ''} also signing until ${when(older[0].until)}` : ''),
      h('dt', {}, 'Created'), h('dd', {}, when(e.created_at)),
      h('dt', {}, 'Updated'), h('dd', {}, when(e.updated_at))),
    err,
    h('div', { class: 'actions' }, toggle, h('label', { for: 'wh_grace' }, 'The current secret keeps signing for', grace), rotate, del));
}

function filters(e) {
  const out = [];
  if ((e.tags || []).length) out.push('tags ' + e.tags.join(', '));
  if ((e.codes || []).length) out.push('codes ' + e.codes.join(', '));
  return out.length ? 'links with ' + out.join('; or ') : 'every link';
}

function editor(e) {
  const { labeled, read } = endpointFields(e);
  const err = h('p', { class: 'error', role: 'alert' });
  const save = h('button', { type: 'submit' }, 'Save changes');
  const form = h('form', { class: 'grid card', onsubmit: async (ev) => {
    ev.preventDefault();
    save.disabled = true;
    err.textContent = '';
    const v = read();
    const patch = { ...v, description: v.description || null, tags: v.tags.length ? v.tags : null, codes: v.codes.length ? v.codes : null };
    try {
      await api.editWebhook(e.id, patch);
      toast('Saved');
      webhookView(e.id);
    } catch (ex) {
      err.textContent = ex.message;
      markField(form, ex.message);
      save.disabled = false;
    }
  } }, labeled, err, h('div', { class: 'actions' }, save));
  return h('section', { 'aria-labelledby': 'edit-h' }, h('h2', { id: 'edit-h' }, 'Edit'), form);
}

const states = [['', 'all'], ['pending', 'pending'], ['delivered', 'delivered'], ['failed', 'failed']];

function messagesSection(e) {
  const state = select('wh_state', '', states);
  const body = h('tbody');
  const note = h('div', { role: 'status', 'aria-live': 'polite' });
  const more = h('button', { type: 'button', class: 'plain', hidden: true }, 'Load more');
  const table = h('div', { class: 'table-wrap' }, h('table', { class: 'stack messages' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Message'), h('th', {}, 'Type'), h('th', {}, 'State'),
      h('th', { class: 'num' }, 'Attempts'), h('th', {}, 'Made'))), body));
  let next = null;

  async function load(reset) {
    if (reset) { body.replaceChildren(); next = null; }
    note.replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
    try {
      const page = await api.messages(e.id, { state: state.value, before: next, limit: 50 });
      body.append(...page.messages.map((m) => h('tr', { 'data-id': m.id, 'data-state': m.state },
        h('td', { 'data-label': 'Message', class: 'wrap' }, h('a', { href: `${epHash(e.id)}/messages/${encodeURIComponent(m.id)}` }, m.id)),
        h('td', { 'data-label': 'Type' }, m.type, m.events > 1 ? ` (${fmt.format(m.events)} events)` : ''),
        h('td', { 'data-label': 'State' }, h('span', { class: 'state-' + m.state }, m.state),
          m.next_at ? h('div', { class: 'muted' }, 'next attempt ' + when(m.next_at)) : null),
        h('td', { 'data-label': 'Attempts', class: 'num' }, fmt.format(m.attempts)),
        h('td', { 'data-label': 'Made' }, when(m.at)))));
      next = page.next || null;
      more.hidden = !next;
      note.replaceChildren();
      if (!body.children.length) note.replaceChildren(h('div', { class: 'empty' }, state.value ? `No ${state.value} messages.` : 'No messages yet: they appear as events are recorded.'));
    } catch (ex) {
      note.replaceChildren(errorBox(ex, 'Could not list the messages'));
    }
  }
  more.addEventListener('click', () => load(false));
  const filter = h('form', { class: 'grid card', onsubmit: (ev) => { ev.preventDefault(); load(true); } },
    h('label', { for: 'wh_state' }, 'State', state), h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Show')));

  const since = h('input', { type: 'datetime-local', name: 'since', id: 'wh_since', required: true });
  since.dataset.path = 'since';
  const err = h('p', { class: 'error', role: 'alert' });
  const replay = h('button', { type: 'submit', class: 'plain' }, 'Replay');
  const replayForm = h('form', { class: 'grid card', onsubmit: async (ev) => {
    ev.preventDefault();
    err.textContent = '';
    replay.disabled = true;
    try {
      const r = await api.replaySince(e.id, new Date(since.value).toISOString());
      toast(`${fmt.format(r.replayed)} message${r.replayed === 1 ? '' : 's'} to send again`);
      load(true);
    } catch (ex) {
      err.textContent = ex.message;
      markField(replayForm, ex.message);
    }
    replay.disabled = false;
  } }, h('label', { for: 'wh_since' }, 'Send again every message made since', since), err, h('div', { class: 'actions' }, replay));
  load(true);
  return h('section', { 'aria-labelledby': 'msgs-h' }, h('h2', { id: 'msgs-h' }, 'Messages'), filter, table, note,
    h('div', { class: 'actions' }, more), h('h3', {}, 'Replay'), replayForm);
}

export async function messageView(id, msgID) {
  const no = refused();
  if (no) return mount(h('h1', {}, 'Webhook message'), no);
  mount(h('p', { class: 'muted' }, 'Loading…'));
  let m;
  try {
    m = await api.message(id, msgID);
  } catch (ex) {
    mount(ex.status === 404 ? h('div', { class: 'empty' }, `No message ${msgID} of this endpoint. `, h('a', { href: epHash(id) }, 'Back to the endpoint.'))
      : errorBox(ex, 'Could not load the message'));
    return;
  }
  const err = h('p', { class: 'error', role: 'alert' });
  const replay = h('button', { type: 'button', onclick: async () => {
    replay.disabled = true;
    err.textContent = '';
    try {
      await api.replayMessage(id, msgID);
      toast('Sent again shortly, under the same id');
      setTimeout(() => { if (location.hash.endsWith(encodeURIComponent(msgID))) messageView(id, msgID); }, 1500);
    } catch (ex) { err.textContent = ex.message; replay.disabled = false; }
  } }, 'Replay this message');
  let text = m.body;
  try { text = JSON.stringify(JSON.parse(m.body), null, 2); } catch { /* shown as sent */ }
  const attempts = m.attempt_log || [];
  mount(h('h1', {}, m.type + ' message'),
    h('p', {}, h('a', { href: epHash(id) }, '← The endpoint')),
    h('div', { class: 'card' },
      h('dl', { class: 'meta' },
        h('dt', {}, 'Id'), h('dd', {}, m.id),
        h('dt', {}, 'Type'), h('dd', {}, m.type, m.events > 1 ? ` (${fmt.format(m.events)} events)` : ''),
        h('dt', {}, 'Made'), h('dd', {}, when(m.at)),
        h('dt', {}, 'State'), h('dd', { 'data-k': 'state' }, h('span', { class: 'state-' + m.state }, m.state)),
        h('dt', {}, 'Attempts'), h('dd', {}, fmt.format(m.attempts)),
        m.next_at ? [h('dt', {}, 'Next attempt'), h('dd', {}, when(m.next_at))] : null),
      err, h('div', { class: 'actions' }, replay)),
    h('section', { 'aria-labelledby': 'attempts-h' }, h('h2', { id: 'attempts-h' }, 'Attempts'),
      attempts.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'stack attempts' },
        h('thead', {}, h('tr', {}, h('th', { class: 'num' }, '#'), h('th', {}, 'At'), h('th', {}, 'Status'),
          h('th', { class: 'num' }, 'Latency'), h('th', {}, 'Answer'))),
        h('tbody', {}, attempts.map((a) => h('tr', { 'data-n': a.n },
          h('td', { 'data-label': 'Attempt', class: 'num' }, a.n),
          h('td', { 'data-label': 'At' }, when(a.at)),
          h('td', { 'data-label': 'Status', 'data-k': 'status', class: a.status >= 200 && a.status < 300 ? 'status-active' : 'status-revoked' },
            a.status ? String(a.status) : 'no answer'),
          h('td', { 'data-label': 'Latency', class: 'num' }, `${fmt.format(a.latency_ms)} ms`),
          h('td', { 'data-label': 'Answer', class: 'wrap' }, a.error ? h('div', { class: 'error' }, a.error) : null,
            a.body ? h('pre', {}, a.body) : a.error ? null : h('span', { class: 'muted' }, 'empty'))))))) 
        : h('p', { class: 'muted' }, 'No attempt yet.')),
    h('section', { 'aria-labelledby': 'body-h' }, h('h2', { id: 'body-h' }, 'Body as sent'), h('pre', { class: 'card body' }, text)));
}
