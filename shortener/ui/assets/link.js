// One link: its details, QR code, clicks (timeseries, breakdowns, per
// rule and variant), targeting (rules.js), edit form with history, and
// revoke.
import { h, mount, fmt, when, copyText, errorBox, toast } from './dom.js';
import { api, session } from './api.js';
import { linkFields, fieldValues, select } from './links.js';
import { barChart } from './chart.js';
import { targetingEditor, targetingSummary, targetingStats } from './rules.js';

export async function linkView(code) {
  mount(h('p', { class: 'muted' }, 'Loading…'));
  let l;
  try {
    l = await api.get(code);
  } catch (e) {
    mount(e.status === 404 ? h('div', { class: 'empty' }, `No link has the code ${code}. `, h('a', { href: '#/links' }, 'Back to the list.'))
      : errorBox(e, 'Could not load the link'));
    return;
  }
  const stats = h('section', { 'aria-labelledby': 'stats-h' });
  const write = session.scope === 'write' && !l.revoked_at;
  mount(
    h('h1', {}, l.title || l.code),
    details(l),
    h('h2', { id: 'stats-h' }, 'Clicks'), stats,
    write ? targetingEditor(l, () => linkView(l.code)) : targetingSummary(l),
    write ? editor(l) : null,
    historySection(code),
  );
  statsSection(stats, l);
}

function details(l) {
  const qr = h('img', { alt: 'QR code of ' + l.short_url, src: api.qrURL(l.code, { format: 'svg', size: 256 }) });
  const qrBox = h('div', { class: 'qr' }, qr, h('div', { class: 'actions' },
    h('a', { class: 'button', href: api.qrURL(l.code, { format: 'png', size: 1024 }), download: l.code + '-qr.png' }, 'Download QR (PNG)'),
    h('a', { class: 'button plain', href: api.qrURL(l.code, { format: 'svg', size: 1024 }), download: l.code + '-qr.svg' }, 'SVG')));
  qr.addEventListener('error', () => { qrBox.hidden = true; });
  const status = l.revoked_at ? 'revoked' : l.expires_at && new Date(l.expires_at) < new Date() ? 'expired' : 'active';
  return h('div', { class: 'card' },
    h('dl', { class: 'meta' },
      h('dt', {}, 'Short URL'), h('dd', {}, h('a', { href: l.short_url, rel: 'noreferrer' }, l.short_url), ' ',
        h('button', { type: 'button', class: 'plain', onclick: () => copyText(l.short_url) }, 'Copy')),
      h('dt', {}, 'Destination'), h('dd', {}, l.long_url),
      h('dt', {}, 'Status'), h('dd', { class: 'status-' + status }, status + (l.revoked_at ? ' ' + when(l.revoked_at) : '')),
      h('dt', {}, 'Created'), h('dd', {}, when(l.created_at)),
      h('dt', {}, 'Expires'), h('dd', {}, when(l.expires_at)),
      h('dt', {}, 'Tags'), h('dd', {}, (l.tags || []).length ? l.tags.map((t) => h('span', { class: 'tag' }, t)) : '—'),
      l.notes ? [h('dt', {}, 'Notes'), h('dd', { style: null }, l.notes)] : null,
      rules(l),
      h('dt', {}, 'Clicks'), h('dd', {}, l.clicks === undefined ? '—' : fmt.format(l.clicks))),
    qrBox);
}

// rules lists the link's own rules, those it has.
function rules(l) {
  const out = [];
  if (l.redirect_status) out.push('redirects with ' + l.redirect_status);
  if (l.valid_from) out.push('valid from ' + when(l.valid_from));
  if (l.max_clicks) out.push(`at most ${fmt.format(l.max_clicks)} clicks (${fmt.format(l.remaining_clicks ?? 0)} left)`);
  if (l.forward_query !== null && l.forward_query !== undefined) out.push(l.forward_query ? 'forwards the query string' : 'drops the query string');
  return out.length ? [h('dt', {}, 'Rules'), h('dd', { class: 'rules' }, out.join('; '))] : null;
}

const ranges = [['24h', 'Last 24 hours', 1], ['7d', 'Last 7 days', 7], ['30d', 'Last 30 days', 30], ['90d', 'Last 90 days', 90]];

function statsSection(box, l) {
  const code = l.code;
  const range = select('range', '30d', ranges.map(([v, label]) => [v, label]));
  const gran = select('granularity', 'day', ['hour', 'day', 'week', 'month']);
  const out = h('div');
  const form = h('form', { class: 'grid card', onsubmit: (e) => { e.preventDefault(); load(); } },
    h('label', { for: 'range' }, 'Range', range), h('label', { for: 'granularity' }, 'Granularity', gran),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Show')));
  box.replaceChildren(form, out);
  async function load() {
    const days = ranges.find((r) => r[0] === range.value)[2];
    const to = new Date(Math.ceil(Date.now() / 3600e3) * 3600e3);
    const from = new Date(to - days * 86400e3);
    const tz = Intl.DateTimeFormat().resolvedOptions().timeZone;
    out.replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
    try {
      const params = { from: from.toISOString(), to: to.toISOString(), granularity: gran.value };
      let s;
      try {
        s = await api.stats(code, { ...params, tz });
      } catch (e) {
        if (e.status !== 400) throw e;
        s = await api.stats(code, params); // hourly data gone: UTC buckets
      }
      out.replaceChildren(...[kpis(s), barChart(s.timeseries, s.granularity), targetingStats(l, params), breakdowns(code, params)].filter(Boolean));
    } catch (e) {
      out.replaceChildren(errorBox(e, 'Could not load clicks'));
    }
  }
  load();
}

function kpis(s) {
  const k = (label, v) => h('div', { class: 'kpi' }, h('span', { class: 'muted' }, label), h('b', {}, v === undefined ? '—' : fmt.format(v)));
  return h('div', { class: 'kpis', 'data-kpis': '' }, k('Clicks', s.total), k('People', s.people), k('Bots', s.bots), k('Unique visitors', s.uniques));
}

const dims = [['country', 'Countries'], ['device', 'Devices'], ['browser', 'Browsers'], ['os', 'Operating systems'], ['referrer', 'Referrers']];

function breakdowns(code, params) {
  const box = h('div', { class: 'breakdowns' });
  for (const [dim, title] of dims) {
    const list = h('ol');
    const card = h('div', { class: 'card', 'data-dim': dim }, h('h3', {}, title), list);
    box.append(card);
    api.stats(code, { ...params, group_by: dim }).then((s) => {
      const entries = s.breakdown || [];
      if (!entries.length) list.replaceWith(h('p', { class: 'muted' }, 'No clicks in this range.'));
      for (const e of entries) list.append(h('li', {}, e.value, ' ', h('span', {}, fmt.format(e.clicks))));
    }).catch(() => { card.hidden = true; });
  }
  return box;
}

function editor(l) {
  const { f, labeled } = linkFields(l);
  const err = h('p', { class: 'error', role: 'alert' });
  const save = h('button', { type: 'submit' }, 'Save changes');
  const revoke = h('button', { type: 'button', class: 'danger', onclick: async () => {
    if (!confirm(`Revoke ${l.code}? It will answer 410 Gone everywhere.`)) return;
    try {
      await api.revoke(l.code);
      toast(l.code + ' revoked');
      linkView(l.code);
    } catch (e) { err.textContent = e.message; }
  } }, 'Revoke');
  const form = h('form', { class: 'grid card', onsubmit: async (e) => {
    e.preventDefault();
    save.disabled = true;
    err.textContent = '';
    try {
      await api.edit(l.code, fieldValues(f));
      toast('Saved');
      linkView(l.code);
    } catch (ex) {
      err.textContent = ex.message;
      save.disabled = false;
    }
  } }, labeled, err, h('div', { class: 'actions' }, save, revoke));
  return h('section', { 'aria-labelledby': 'edit-h' }, h('h2', { id: 'edit-h' }, 'Edit'), form);
}

function historySection(code) {
  const list = h('ol', { class: 'card' });
  const box = h('section', { 'aria-labelledby': 'hist-h' }, h('h2', { id: 'hist-h' }, 'History'), list);
  api.history(code, { limit: 20 }).then((page) => {
    if (!page.history.length) list.replaceWith(h('p', { class: 'muted' }, 'Never edited.'));
    for (const e of page.history) {
      list.append(h('li', {}, `${when(e.at)} by key ${e.key}: `,
        Object.keys(e.changes).join(', ')));
    }
  }).catch((e) => list.replaceWith(errorBox(e, 'Could not load the history')));
  return box;
}
