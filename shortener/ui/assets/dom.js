// Small DOM helpers. Every string reaches the page as text (textContent or
// an attribute value): nothing from the API is ever parsed as HTML.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function svg(tag, attrs, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

export function mount(...children) {
  const main = document.getElementById('main');
  main.replaceChildren(...children.filter(Boolean));
  return main;
}

let toastTimer;
export function toast(msg) {
  const t = document.querySelector('.toast');
  t.textContent = msg;
  t.classList.add('show');
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => t.classList.remove('show'), 2500);
}

export const fmt = new Intl.NumberFormat();

// One formatter for every date shown, not one built per call (as
// toLocaleString does): the list formats 50 at once.
const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

export function when(iso) {
  return iso ? dateTime.format(new Date(iso)) : '—';
}

// copyText copies to the clipboard and says so (what, when given, names
// the text: a secret is not repeated in the toast).
export async function copyText(text, what) {
  try {
    await navigator.clipboard.writeText(text);
    toast('Copied ' + (what || text));
  } catch {
    toast('Copy failed: select the text and copy it by hand');
  }
}

// errorBox says what went wrong and what to do.
export function errorBox(err, what) {
  return h('div', { class: 'card', role: 'alert' },
    h('p', { class: 'error' }, (what ? what + ': ' : '') + err.message),
    h('p', { class: 'muted' }, err.status === 401 ? 'Your session has ended: sign in again.'
      : err.status >= 500 || !err.status ? 'The server could not answer. Try again in a moment.' : 'Check the values and try again.'));
}

// markField points at the control an error names (rules[0].url: ...):
// the one with that path or, failing that, with the nearest parent path.
export function markField(form, message) {
  for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
  const m = /^([a-z_]+(?:\[\d+\]|\.[a-z_]+)*)[: ]/.exec(message || '');
  for (let p = m ? m[1] : ''; p;) {
    const el = [...form.querySelectorAll('[data-path]')].find((e) => e.dataset.path === p && !e.closest('[hidden]'));
    if (el) {
      el.setAttribute('aria-invalid', 'true');
      const control = el.matches('input, textarea') ? el : el.querySelector('input, textarea');
      if (control) control.focus();
      return;
    }
    const parent = p.replace(/(\[\d+\]|\.[a-z_]+)$/, '');
    p = parent === p ? '' : parent;
  }
}
