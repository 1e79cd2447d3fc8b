// A link's targeting (issue 35): the editor of its destination rules (in
// order: the first whose conditions all hold wins) and of its A/B split,
// the preview of what one visitor would get from the rules being edited,
// and the clicks of each rule and variant side by side.
import { h, fmt, toast, markField } from './dom.js';
import { api } from './api.js';

const devices = [['mobile', 'Mobile'], ['tablet', 'Tablet'], ['desktop', 'Desktop'], ['tv', 'TV'], ['bot', 'Bot'], ['other', 'Other']];
const systems = [['ios', 'iOS'], ['android', 'Android'], ['windows', 'Windows'], ['macos', 'macOS'], ['linux', 'Linux'], ['chromeos', 'ChromeOS'], ['other', 'Other']];

// The user agents the preview offers.
const presets = [
  ['iphone', 'iPhone', 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1'],
  ['android', 'Android phone', 'Mozilla/5.0 (Linux; Android 15; Pixel 9) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36'],
  ['desktop', 'Desktop', 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'],
];

const maxRules = 50, maxVariants = 10;
let ruleBoxes = 0; // rule boxes made: each one's radio group has its own name

// FieldError is a value the editor refuses before the server sees it;
// path names the field as the server's errors do (rules[0].url).
class FieldError extends Error {
  constructor(path, message) { super(`${path}: ${message}`); this.path = path; }
}

const words = (s) => s.split(',').map((t) => t.trim()).filter(Boolean);
const ruleName = (r, i) => r.name || `rule-${i + 1}`;
const percent = (w) => `${w}%`;

// checks is a group of checkboxes, one per [value, label], legend first.
function checks(legend, options, on) {
  const boxes = options.map(([v, label]) => h('label', { class: 'check' },
    h('input', { type: 'checkbox', value: v, checked: (on || []).includes(v) }), label));
  const el = h('fieldset', { class: 'checks' }, h('legend', {}, legend), boxes);
  return { el, values: () => boxes.map((b) => b.firstChild).filter((c) => c.checked).map((c) => c.value) };
}

// variantList edits an A/B split: rows of name, URL and weight, and a
// line that says whether the weights sum to 100. prefix() is what the
// labels start with ("" or "Rule 2 ").
function variantList(variants, prefix, changed) {
  const rows = [];
  const box = h('div', { class: 'variants' });
  const sum = h('p', { class: 'sum', 'aria-live': 'polite' });
  const add = h('button', { type: 'button', class: 'plain', onclick: () => {
    addRow({});
    rows[rows.length - 1].name.focus();
    changed();
  } }, 'Add variant');

  function addRow(v) {
    const used = new Set(rows.map((r) => r.name.value));
    const free = 'abcdefghij'.split('').find((c) => !used.has(c)) || '';
    const r = {
      name: h('input', { type: 'text', name: 'variant_name', value: v.name || free, maxlength: 32, pattern: '[A-Za-z0-9_\\-]{1,32}', required: true }),
      url: h('input', { type: 'url', name: 'variant_url', value: v.url || '', required: true, placeholder: 'https://' }),
      weight: h('input', { type: 'number', name: 'variant_weight', value: v.weight ?? '', min: 1, max: 99, step: 1, required: true, class: 'weight' }),
      labels: [h('span'), h('span'), h('span')],
    };
    r.remove = h('button', { type: 'button', class: 'plain', onclick: () => {
      rows.splice(rows.indexOf(r), 1);
      r.el.remove();
      renumber();
      (rows.length ? rows[rows.length - 1].remove : add).focus();
      changed();
    } }, 'Remove');
    r.el = h('div', { class: 'variant' },
      h('label', {}, r.labels[0], r.name), h('label', { class: 'wide' }, r.labels[1], r.url),
      h('label', {}, r.labels[2], r.weight), r.remove);
    rows.push(r);
    box.append(r.el);
    renumber();
  }

  // renumber relabels the rows (after one moved or went) and says the sum.
  function renumber() {
    rows.forEach((r, i) => {
      const p = prefix() ? `${prefix()}variant ${i + 1}` : `Variant ${i + 1}`;
      r.labels[0].textContent = `${p} name`;
      r.labels[1].textContent = `${p} URL`;
      r.labels[2].textContent = `${p} weight (%)`;
      r.remove.setAttribute('aria-label', `Remove ${p.toLowerCase()}`);
    });
    add.disabled = rows.length >= maxVariants;
    const total = rows.reduce((s, r) => s + (Number(r.weight.value) || 0), 0);
    sum.hidden = !rows.length;
    sum.className = 'sum ' + (rows.length === 1 || total !== 100 ? 'error' : 'ok');
    sum.textContent = rows.length === 1 ? 'An A/B split needs at least 2 variants.'
      : total === 100 ? 'The weights sum to 100.' : `The weights sum to ${total}: they must sum to 100.`;
  }

  for (const v of variants || []) addRow(v);
  renumber();
  box.addEventListener('input', renumber);
  return {
    el: h('div', {}, box, sum, h('div', { class: 'actions' }, add)),
    renumber,
    empty: () => !rows.length,
    // read is the list as the API takes it (null for none); path names it.
    read(path) {
      rows.forEach((r, i) => {
        r.name.dataset.path = `${path}[${i}].name`;
        r.url.dataset.path = `${path}[${i}].url`;
        r.weight.dataset.path = `${path}[${i}].weight`;
      });
      sum.dataset.path = path;
      if (!rows.length) return null;
      const out = rows.map((r) => ({ name: r.name.value.trim(), url: r.url.value.trim(), weight: Number(r.weight.value) }));
      const total = out.reduce((s, v) => s + v.weight, 0);
      if (out.length < 2) throw new FieldError(path, 'an A/B split needs 2 to 10 variants');
      if (total !== 100) throw new FieldError(path, `the weights sum to ${total}, they must sum to 100`);
      return out;
    },
  };
}

// ruleBox edits one rule: its name, conditions, and destination (a URL
// or an A/B split). The conditions without a control of their own
// (browser, ip, query, time) are edited as JSON.
function ruleBox(r, changed, move, remove) {
  const { device, os, country, language, ...other } = r.if || {};
  const legend = h('legend');
  const name = h('input', { type: 'text', name: 'rule_name', value: r.name || '', maxlength: 64, placeholder: 'optional' });
  const dev = checks('Devices', devices, device);
  const sys = checks('Operating systems', systems, os);
  const countries = h('input', { type: 'text', name: 'rule_country', value: (country || []).join(', '), placeholder: 'FR, BE', autocapitalize: 'characters' });
  const langs = h('input', { type: 'text', name: 'rule_language', value: (language || []).join(', '), placeholder: 'fr, de-CH' });
  const more = h('textarea', { name: 'rule_more', rows: 2, spellcheck: 'false', placeholder: '{"browser": ["firefox"], "query": [{"name": "src", "equals": "qr"}]}' },
    Object.keys(other).length ? JSON.stringify(other) : '');
  const url = h('input', { type: 'url', name: 'rule_url', value: r.url || '', required: true, placeholder: 'https://' });
  const app = h('input', { type: 'url', name: 'rule_app_url', value: r.app_url || '', placeholder: 'optional: myapp://open' });
  const labels = { prefix: '', name: h('span'), url: h('span'), app: h('span'), mode: h('legend') };
  const self = {};
  const split = variantList(r.variants, () => labels.prefix, changed);
  const one = h('fieldset', { class: 'plain' }, h('label', {}, labels.url, url), h('label', {}, labels.app, app));
  const many = h('fieldset', { class: 'plain' }, split.el);
  const group = 'rule_mode_' + ++ruleBoxes;
  const mode = (v) => h('input', { type: 'radio', name: group, value: v,
    checked: (v === 'variants') === Boolean(r.variants && r.variants.length), onchange: show });
  const radios = [mode('url'), mode('variants')];
  const up = h('button', { type: 'button', class: 'plain', onclick: () => move(self, -1) }, '↑ Up');
  const down = h('button', { type: 'button', class: 'plain', onclick: () => move(self, 1) }, '↓ Down');
  const del = h('button', { type: 'button', class: 'plain danger-text', onclick: () => remove(self) }, 'Remove rule');

  // show enables the chosen destination; the other is hidden and
  // disabled, so the browser's form checks skip it.
  function show() {
    const splits = radios[1].checked;
    one.hidden = one.disabled = splits;
    many.hidden = many.disabled = !splits;
  }
  show();

  self.el = h('fieldset', { class: 'rule' }, legend,
    h('div', { class: 'grid' }, h('label', {}, labels.name, name),
      h('label', {}, 'Countries (comma-separated)', countries), h('label', {}, 'Languages (comma-separated)', langs)),
    dev.el, sys.el,
    h('label', {}, 'Other conditions (JSON: browser, ip, query, time)', more),
    h('fieldset', { class: 'checks' }, labels.mode,
      h('label', { class: 'check' }, radios[0], 'One URL'), h('label', { class: 'check' }, radios[1], 'A/B split')),
    one, many,
    h('div', { class: 'actions' }, up, down, del));
  self.number = (i, n) => {
    labels.prefix = `Rule ${i + 1} `;
    legend.textContent = `Rule ${i + 1}`;
    labels.name.textContent = `Rule ${i + 1} name`;
    labels.url.textContent = `Rule ${i + 1} URL`;
    labels.app.textContent = `Rule ${i + 1} app URL`;
    labels.mode.textContent = `Rule ${i + 1} sends to`;
    up.setAttribute('aria-label', `Move rule ${i + 1} up`);
    down.setAttribute('aria-label', `Move rule ${i + 1} down`);
    del.setAttribute('aria-label', `Remove rule ${i + 1}`);
    up.disabled = i === 0;
    down.disabled = i === n - 1;
    split.renumber();
  };
  self.focus = (which) => (which === 'up' ? up : which === 'down' ? down : name).focus();
  self.read = (i) => {
    const path = `rules[${i}]`;
    self.el.dataset.path = path;
    name.dataset.path = `${path}.name`;
    url.dataset.path = `${path}.url`;
    app.dataset.path = `${path}.app_url`;
    more.dataset.path = `${path}.if`;
    dev.el.dataset.path = `${path}.if.device`;
    sys.el.dataset.path = `${path}.if.os`;
    countries.dataset.path = `${path}.if.country`;
    langs.dataset.path = `${path}.if.language`;
    const out = {};
    if (name.value.trim()) out.name = name.value.trim();
    let cond = {};
    if (more.value.trim()) {
      try { cond = JSON.parse(more.value); } catch (e) { throw new FieldError(`${path}.if`, 'the other conditions are not JSON: ' + e.message); }
      if (!cond || typeof cond !== 'object' || Array.isArray(cond)) throw new FieldError(`${path}.if`, 'the other conditions must be a JSON object');
    }
    const lists = { device: dev.values(), os: sys.values(), country: words(countries.value).map((c) => c.toUpperCase()), language: words(langs.value) };
    for (const [k, v] of Object.entries(lists)) if (v.length) cond[k] = v;
    if (Object.keys(cond).length) out.if = cond;
    if (radios[1].checked) {
      out.variants = split.read(`${path}.variants`);
      if (!out.variants) throw new FieldError(`${path}.variants`, 'add the variants of its A/B split');
    } else {
      out.url = url.value.trim();
      if (app.value.trim()) out.app_url = app.value.trim();
    }
    return out;
  };
  return self;
}

// targetingEditor is the form that edits l's rules, A/B split and
// fallback URL, with the live preview beside it; saved() runs after a save.
export function targetingEditor(l, saved) {
  const rules = [];
  const list = h('div', { class: 'rule-list' });
  const none = h('p', { class: 'muted' }, 'No rules: every visitor goes to the A/B split or the destination.');
  const addRule = h('button', { type: 'button', class: 'plain', onclick: () => {
    add({ if: {} });
    rules[rules.length - 1].focus();
    changed();
  } }, 'Add rule');
  const split = variantList(l.variants, () => '', () => changed());
  const fallback = h('input', { type: 'url', name: 'fallback_url', value: l.fallback_url || '', placeholder: 'none: 410 Gone' });
  fallback.dataset.path = 'fallback_url';
  const err = h('p', { class: 'error', role: 'alert' });
  const save = h('button', { type: 'submit' }, 'Save targeting');
  const preview = previewer(l, () => read());

  function changed() { preview.schedule(); }

  function add(r) {
    rules.push(ruleBox(r, changed, move, remove));
    renumber();
  }
  function move(r, by) {
    const i = rules.indexOf(r), j = i + by;
    if (j < 0 || j >= rules.length) return;
    [rules[i], rules[j]] = [rules[j], rules[i]];
    renumber();
    r.focus(by < 0 && j > 0 || by > 0 && j === rules.length - 1 ? 'up' : 'down');
    changed();
  }
  function remove(r) {
    const i = rules.indexOf(r);
    rules.splice(i, 1);
    renumber();
    if (rules.length) rules[Math.min(i, rules.length - 1)].focus();
    else addRule.focus();
    changed();
  }
  function renumber() {
    list.replaceChildren(...rules.map((r) => r.el));
    rules.forEach((r, i) => r.number(i, rules.length));
    none.hidden = rules.length > 0;
    addRule.disabled = rules.length >= maxRules;
  }
  // read is the targeting as the API takes it.
  function read() {
    return {
      rules: rules.length ? rules.map((r, i) => r.read(i)) : null,
      variants: split.read('variants'),
      fallback_url: fallback.value.trim() || null,
    };
  }

  for (const r of l.rules || []) add(r);
  renumber();
  const form = h('form', { class: 'card targeting', onsubmit: async (e) => {
    e.preventDefault();
    err.textContent = '';
    let body;
    try {
      body = read();
    } catch (ex) {
      err.textContent = ex.message;
      markField(form, ex.message);
      return;
    }
    save.disabled = true;
    try {
      await api.edit(l.code, body);
      toast('Saved');
      saved();
    } catch (ex) {
      err.textContent = ex.message;
      markField(form, ex.message);
      save.disabled = false;
    }
  } },
  h('h3', {}, 'Rules'), h('p', { class: 'muted' }, 'In order: the first rule whose conditions all hold decides. A condition left empty holds for everyone.'),
  none, list, h('div', { class: 'actions' }, addRule),
  h('h3', {}, 'A/B split'), h('p', { class: 'muted' }, 'When no rule holds: each visitor gets one variant, the same on every visit.'),
  split.el,
  h('label', { class: 'fallback' }, 'Fallback URL (once expired, revoked or used up)', fallback),
  err, h('div', { class: 'actions' }, save));
  form.addEventListener('input', changed);
  form.addEventListener('change', changed);
  preview.now();
  return h('section', { 'aria-labelledby': 'targeting-h' }, h('h2', { id: 'targeting-h' }, 'Targeting'), form, preview.el);
}

// previewer asks the server what one visitor would get from the rules
// being edited (read() gives them), a moment after the last change.
function previewer(l, read) {
  const preset = h('select', { name: 'preview_preset' },
    presets.map(([v, label]) => h('option', { value: v }, label)), h('option', { value: '' }, 'Other'));
  const ua = h('input', { type: 'text', name: 'preview_ua', value: presets[0][2], spellcheck: 'false' });
  const country = h('input', { type: 'text', name: 'preview_country', maxlength: 2, placeholder: 'FR', autocapitalize: 'characters' });
  const language = h('input', { type: 'text', name: 'preview_language', placeholder: 'fr-FR, en;q=0.5' });
  const out = h('dl', { class: 'facts preview' });
  const status = h('div', { role: 'status', 'aria-live': 'polite', class: 'preview-out' }, out);
  preset.addEventListener('change', () => {
    const p = presets.find((x) => x[0] === preset.value);
    if (p) ua.value = p[2];
    schedule();
  });
  ua.addEventListener('input', () => { preset.value = (presets.find((x) => x[2] === ua.value) || [''])[0]; });
  let timer, seq = 0;
  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(run, 250);
  }
  async function run() {
    const n = ++seq;
    let t;
    try {
      t = read();
    } catch (e) {
      show({ error: 'Not yet: ' + e.message });
      return;
    }
    const visitor = { user_agent: ua.value, country: country.value.trim().toUpperCase(), accept_language: language.value.trim() };
    try {
      const a = await api.preview({ code: l.code, rules: t.rules, variants: t.variants, visitor });
      if (n === seq) show(a);
    } catch (e) {
      if (n === seq) show({ error: e.message });
    }
  }
  function show(a) {
    const row = (k, label, v) => [h('dt', {}, label), h('dd', { 'data-k': k }, v)];
    if (a.error) {
      out.replaceChildren(h('dt', {}, 'Preview'), h('dd', { class: 'error', 'data-k': 'error' }, a.error));
      return;
    }
    out.replaceChildren(...[
      row('rule', 'Rule', a.rule ?? 'none'),
      row('variant', 'Variant', a.variant ?? 'none'),
      row('url', 'Goes to', a.url ?? `${l.long_url} (the destination)`),
      a.app_url ? row('app_url', 'Opens the app at', a.app_url) : [],
      row('seen', 'Seen as', [a.device, a.os, a.browser, a.country].filter(Boolean).join(', ') || 'nothing known')].flat());
  }
  const form = h('form', { class: 'grid', onsubmit: (e) => { e.preventDefault(); schedule(); } },
    h('label', {}, 'Device preset', preset), h('label', {}, 'User agent', ua),
    h('label', {}, 'Country (ISO code)', country), h('label', {}, 'Accept-Language', language));
  form.addEventListener('input', schedule);
  return {
    schedule,
    now: run,
    el: h('section', { 'aria-labelledby': 'preview-h' }, h('h3', { id: 'preview-h' }, 'Preview: what would this visitor get?'),
      h('div', { class: 'card preview-card' }, h('p', { class: 'muted' }, 'Asks the server about the rules as they are in the form above, saved or not.'),
        form, status)),
  };
}

// targetingSummary shows l's targeting as text (to read keys, and on a
// revoked link).
export function targetingSummary(l) {
  const rules = l.rules || [];
  const cond = (c) => Object.entries(c || {}).map(([k, v]) => `${k} ${Array.isArray(v) ? v.map((x) => (typeof x === 'object' ? JSON.stringify(x) : x)).join(' or ') : JSON.stringify(v)}`).join(', ');
  const split = (vs) => vs.map((v) => `${v.name} ${percent(v.weight)} → ${v.url}`).join('; ');
  const items = rules.map((r, i) => h('li', {}, h('b', {}, ruleName(r, i)), ': ',
    cond(r.if) ? `if ${cond(r.if)}` : 'everyone', ' → ', r.variants ? 'A/B split: ' + split(r.variants) : r.url));
  return h('section', { 'aria-labelledby': 'targeting-h' }, h('h2', { id: 'targeting-h' }, 'Targeting'),
    h('div', { class: 'card targeting' },
      items.length ? h('ol', { class: 'rule-summary' }, items) : h('p', { class: 'muted' }, 'No rules.'),
      h('p', {}, 'Otherwise: ', (l.variants || []).length ? 'A/B split: ' + split(l.variants) : 'the destination.'),
      l.fallback_url ? h('p', {}, 'Once expired, revoked or used up: ', l.fallback_url) : null));
}

// targetingStats shows the clicks of each rule and variant of l over
// params' window, side by side, with their unique visitors when the
// server counts them; null when l has neither.
export function targetingStats(l, params) {
  const rules = l.rules || [];
  const lists = [];
  if ((l.variants || []).length) lists.push(['A/B split', l.variants]);
  rules.forEach((r, i) => { if ((r.variants || []).length) lists.push([`Rule ${ruleName(r, i)}: A/B split`, r.variants]); });
  if (!rules.length && !lists.length) return null;
  const box = h('div', { class: 'breakdowns targeting-stats' });
  const num = (v) => h('td', { class: 'num' }, v === undefined || v === null ? '—' : fmt.format(v));
  const table = (caption, head, rows) => h('div', { class: 'card' }, h('table', { class: 'side' }, h('caption', {}, caption),
    h('thead', {}, h('tr', {}, head.map((t, i) => h('th', { class: i ? 'num' : null, scope: 'col' }, t)))), h('tbody', {}, rows)));
  const load = (dim) => api.stats(l.code, { ...params, group_by: dim }).then((s) => new Map((s.breakdown || []).map((e) => [e.value, e])));
  const row = (key, name, detail, extra, e) => h('tr', { [`data-${key}`]: name },
    h('th', { scope: 'row' }, name, detail ? h('div', { class: 'muted url' }, detail) : null), extra, num(e ? e.clicks : 0), num(e ? e.uniques : undefined));
  const rest = (seen, got, key) => [...got.values()].filter((e) => !seen.has(e.value)).map((e) => row(key, e.value, 'no longer in the link', key === 'variant' ? num(undefined) : null, e));
  if (lists.length) {
    load('variant').then((got) => {
      const seen = new Set();
      for (const [caption, vs] of lists) {
        box.append(table(caption, ['Variant', 'Weight', 'Clicks', 'Unique visitors'], vs.map((v) => {
          seen.add(v.name);
          return row('variant', v.name, v.url, h('td', { class: 'num' }, percent(v.weight)), got.get(v.name));
        })));
      }
      const old = rest(seen, got, 'variant');
      if (old.length) box.append(table('Other variants', ['Variant', 'Weight', 'Clicks', 'Unique visitors'], old));
    }).catch(() => box.append(h('p', { class: 'muted' }, 'The clicks per variant are not available.')));
  }
  if (rules.length) {
    load('rule').then((got) => {
      const seen = new Set();
      const rows = rules.map((r, i) => {
        seen.add(ruleName(r, i));
        return row('rule', ruleName(r, i), r.url || 'A/B split', null, got.get(ruleName(r, i)));
      });
      box.prepend(table('Rules', ['Rule', 'Clicks', 'Unique visitors'], rows.concat(rest(seen, got, 'rule'))));
    }).catch(() => box.append(h('p', { class: 'muted' }, 'The clicks per rule are not available.')));
  }
  return h('section', { 'aria-label': 'Clicks per rule and variant' }, h('h3', {}, 'Rules and variants'), box);
}
