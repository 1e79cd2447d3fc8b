// The overview: totals, top links and top countries across links.
import { h, mount, fmt, errorBox } from './dom.js';
import { api, setDomain } from './api.js';

export async function overviewView() {
  mount(h('h1', {}, 'Overview'), h('p', { class: 'muted' }, 'Loading…'));
  const to = new Date(Math.ceil(Date.now() / 3600e3) * 3600e3);
  const from = new Date(to - 30 * 86400e3);
  try {
    const s = await api.overview({ from: from.toISOString(), to: to.toISOString() });
    const k = (label, v) => h('div', { class: 'kpi' }, h('span', { class: 'muted' }, label), h('b', {}, v === undefined ? '—' : fmt.format(v)));
    const top = (title, rows, name) => h('div', { class: 'card' }, h('h3', {}, title),
      rows && rows.length ? h('ol', {}, rows.map((r) => h('li', {}, name(r), ' ', h('span', {}, fmt.format(r.clicks)))))
        : h('p', { class: 'muted' }, 'No clicks in the last 30 days.'));
    mount(h('h1', {}, 'Overview'), h('p', { class: 'muted' }, 'Last 30 days, all links.'),
      h('div', { class: 'kpis' }, k('Clicks', s.total), k('People', s.people), k('Bots', s.bots)),
      h('div', { class: 'breakdowns' },
        top('Top links', s.links, (r) => h('a', { href: '#/links/' + encodeURIComponent(r.code), onclick: () => setDomain(r.domain) },
          r.domain ? r.domain + '/' + r.code : r.code)),
        top('Top countries', s.countries, (r) => r.value),
        top('Top referrers', s.referrers, (r) => r.value)));
  } catch (e) {
    mount(h('h1', {}, 'Overview'), errorBox(e, 'Could not load the overview'));
  }
}
