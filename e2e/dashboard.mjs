// Issue 18's acceptance in Chromium against a running shortener with its
// dashboard (run by shortener/ui_browser_test.go, TestUIBrowser). Env: BASE
// (the server), UI (the dashboard's path), WRITE_KEY, READ_KEY, OTHER
// (another origin of the same site). Prints a RESULT line for the Go test.
import { PNG } from 'pngjs';
import jsQR from 'jsqr';
import { readFile } from 'node:fs/promises';
import { DESKTOP_UA, env, launch, plainHTTP, step, summary, assert, equal, poll, signIn, kpi } from './lib.mjs';

const BASE = env('BASE'), UI = BASE + env('UI'), OTHER = env('OTHER');
const WRITE_KEY = env('WRITE_KEY'), READ_KEY = env('READ_KEY');
const code = 'e2e-' + Date.now().toString(36);
// The destinations are pages of the other server, by name (the handler runs
// with deny_private off, and refuses its own host as a redirect loop).
const DEST = OTHER.replace('127.0.0.1', 'localhost');
const dest1 = DEST + '/first', dest2 = DEST + '/second';

const browser = await launch();
const http = await plainHTTP();
let redirects = 0;

// redirect requests the short URL without following it: its status and Location.
async function redirect(url) {
  const r = await http.get(url);
  if (r.status() === 302) redirects++;
  return { status: r.status(), location: r.headers()['location'] };
}

try {
  const ctx = await browser.newContext({ userAgent: DESKTOP_UA, acceptDownloads: true });
  ctx.setDefaultTimeout(10000);
  const page = await ctx.newPage();
  page.on('pageerror', (e) => console.log('page error: ' + e.message));

  await step('sign in with the write key: no Webhooks entry (the handler has no webhooks block)', async () => {
    await signIn(page, UI, WRITE_KEY);
    await page.getByRole('link', { name: 'Links', exact: true }).waitFor();
    equal(await page.getByRole('link', { name: 'Webhooks', exact: true }).count(), 0, 'the Webhooks entry');
    await page.goto(UI + '#/webhooks');
    await page.getByText('Webhooks are off: the shortener has no webhooks block.').waitFor();
  });

  const shortURL = await step('create a link with tags', async () => {
    await page.getByRole('link', { name: 'New link' }).click();
    await page.getByLabel('Destination URL').fill(dest1);
    await page.getByLabel('Custom code (optional)').fill(code);
    await page.getByLabel('Title').fill('Spring poster');
    await page.getByLabel('Tags (comma-separated)').fill('print, campaign:spring');
    await page.getByLabel('Max clicks').fill('1000');
    await page.getByRole('button', { name: 'Create link' }).click();
    await poll('the link page opens', 5000, async () => page.url().endsWith('#/links/' + code) ||
      Promise.reject(new Error((await page.locator('main .error').textContent()) || 'no error shown')));
    await page.getByRole('heading', { name: 'Spring poster' }).waitFor();
    const tags = await page.locator('.meta .tag').allTextContents();
    equal(tags.join(','), 'print,campaign:spring', 'tags on the link page');
    equal(await page.locator('.meta dd.rules').textContent(), 'at most 1,000 clicks (1,000 left)', 'the rule set in the form');
    return page.locator('.meta a[rel=noreferrer]').textContent();
  });
  equal(shortURL, `${BASE}/${code}`, 'short URL');

  await step('find it by search and by tag', async () => {
    const other = await http.post(BASE + '/api/links', { headers: { Authorization: 'Bearer ' + WRITE_KEY }, data: { long_url: 'https://example.com/untagged', code: code + '-b' } });
    equal(other.status(), 201, 'second link created');
    await page.getByRole('link', { name: 'Links', exact: true }).click();
    await page.getByLabel('Search').fill(code);
    await page.getByRole('button', { name: 'Apply' }).click();
    await poll('search answers both links', 5000, async () => (await page.locator('tbody tr').count()) === 2);
    await page.getByLabel('Tag').fill('print');
    await page.getByRole('button', { name: 'Apply' }).click();
    await poll('tag filter keeps the tagged link only', 5000, async () =>
      (await page.locator('tbody tr').count()) === 1 && (await page.locator(`tr[data-code="${code}"]`).count()) === 1);
    equal((await page.locator(`tr[data-code="${code}"] .tag`).allTextContents()).join(','), 'print,campaign:spring', 'tags in the list');
    assert(await page.getByRole('button', { name: 'Load more' }).isHidden(), 'no Load more under 50 links');
  });

  await step('real redirects: browser navigations and plain requests', async () => {
    const visitor = await ctx.newPage();
    for (let i = 0; i < 3; i++) {
      await visitor.goto(shortURL);
      equal(visitor.url(), dest1, 'the browser followed the redirect');
      redirects++;
    }
    await visitor.close();
    const r = await redirect(shortURL);
    equal(r.status, 302, 'status');
    equal(r.location, dest1, 'Location');
  });

  await step('edit its destination and see the redirect change', async () => {
    await page.goto(`${UI}#/links/${code}`);
    await page.getByLabel('Destination URL').fill(dest2);
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.locator('.meta dd', { hasText: dest2 }).waitFor();
    const r = await redirect(shortURL);
    equal(r.status, 302, 'status after the edit');
    equal(r.location, dest2, 'Location after the edit');
    await page.locator('#hist-h + ol li', { hasText: 'long_url' }).first().waitFor();
  });

  await step('its stats after the redirects, read off the page', async () => {
    const n = await poll(`the page shows ${redirects} clicks`, 15000, async () => {
      await page.getByRole('button', { name: 'Show' }).click();
      await page.locator('[data-kpis]').waitFor();
      return (await kpi(page, 'Clicks')) === redirects && redirects;
    });
    const people = await kpi(page, 'People'), bots = await kpi(page, 'Bots');
    equal(people + bots, n, 'people + bots');
    equal(people, redirects, 'people (a desktop browser made every request)');
    const bars = await page.locator('.chart rect.hit').evaluateAll((els) => els.reduce((s, e) => s + Number(e.dataset.clicks), 0));
    equal(bars, n, 'clicks in the chart bars');
  });

  const scanned = await step('download the QR code, decode it, scan it: a qr click', async () => {
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download QR (PNG)' }).click()]);
    const png = PNG.sync.read(await readFile(await download.path()));
    const qr = jsQR(new Uint8ClampedArray(png.data), png.width, png.height);
    assert(qr, 'jsQR found no code in the PNG');
    equal(qr.data, shortURL + '?_qr=1', 'the QR code holds the short URL and the marker');
    const r = await redirect(qr.data);
    equal(r.location, dest2, 'the scan redirects to the destination, without the marker');
    redirects--; // counted apart, as a scan
    const sources = await poll('the scan counted with source qr', 15000, () => page.evaluate(async (c) => {
      const s = await (await fetch(`/api/links/${c}/stats?group_by=source`)).json();
      return Object.fromEntries((s.breakdown || []).map((e) => [e.value, e.clicks]));
    }, code).then((m) => m.qr === 1 && m));
    equal(sources.link, redirects, 'clicks with source link');
    return qr.data;
  });

  await step('revoke it and see 410', async () => {
    page.once('dialog', (d) => d.accept());
    await page.getByRole('button', { name: 'Revoke' }).click();
    await page.locator('.meta .status-revoked').waitFor();
    equal((await redirect(shortURL)).status, 410, 'status after revoke');
  });

  await step('a CSRF attempt from another origin is refused', async () => {
    const attacker = await ctx.newPage();
    await attacker.goto(OTHER + '/');
    // fetch with the cookie (127.0.0.1 on another port is the same site: SameSite lets it through).
    // The browser cannot read the answer (no CORS): the Go test checks the
    // server saw this request with the session cookie and answered 403.
    const sent = attacker.waitForRequest(BASE + '/api/links');
    const fetched = await attacker.evaluate(async (u) => {
      try {
        await fetch(u, { method: 'POST', credentials: 'include', headers: { 'Content-Type': 'text/plain' }, body: '{"long_url":"https://evil.example/x","code":"csrf-fetch"}' });
        return 'read';
      } catch { return 'blocked'; }
    }, BASE + '/api/links');
    await sent;
    equal(fetched, 'blocked', 'the other origin cannot read the answer');
    // A form posted from the other origin: a top-level navigation the page can show.
    const nav = attacker.waitForResponse((r) => r.url() === BASE + '/api/links');
    await attacker.evaluate((u) => {
      const f = document.createElement('form');
      f.method = 'POST'; f.action = u; f.enctype = 'text/plain';
      const i = document.createElement('input');
      i.name = '{"long_url":"https://evil.example/x","code":"csrf-form","x":"'; i.value = '"}';
      f.append(i); document.body.append(f); f.submit();
    }, BASE + '/api/links');
    const res = await nav;
    equal(res.status(), 403, 'form post from another origin');
    assert((await res.text()).includes('cross-origin request refused'), 'refused for its Origin');
    // The session cookie and a valid CSRF token, with a foreign Origin.
    const token = (await (await ctx.request.get(UI + 'session')).json()).csrf_token;
    const r = await ctx.request.post(BASE + '/api/links', { headers: { Origin: OTHER, 'X-CSRF-Token': token }, data: { long_url: 'https://evil.example/x', code: 'csrf-header' } });
    equal(r.status(), 403, 'cookie + token + foreign Origin');
    await attacker.close();
  });

  await step('a read key: no write controls, writes refused', async () => {
    const rctx = await browser.newContext({ userAgent: DESKTOP_UA });
    const rp = await rctx.newPage();
    await signIn(rp, UI, READ_KEY);
    assert(await rp.locator('.scope', { hasText: 'read-only' }).isVisible(), 'read-only badge shown');
    assert(!(await rp.getByRole('link', { name: 'New link' }).isVisible()), 'no New link');
    await rp.goto(`${UI}#/links/${code}-b`);
    await rp.locator('.meta').waitFor();
    await rp.locator('#hist-h').waitFor();
    equal(await rp.getByRole('button', { name: /Save changes|Revoke/ }).count(), 0, 'edit and revoke buttons');
    equal(await rp.locator('form #long_url').count(), 0, 'edit form');
    await rp.goto(`${UI}#/new`);
    await rp.getByText('This key is read-only').waitFor();
    const statuses = await rp.evaluate(async (c) => {
      const s = await (await fetch('session')).json();
      const h = { 'Content-Type': 'application/json', 'X-CSRF-Token': s.csrf_token };
      const w = (m, u, b) => fetch(u, { method: m, headers: h, body: b && JSON.stringify(b) }).then((r) => r.status);
      return [s.scope, await w('POST', '/api/links', { long_url: 'https://example.com/r', code: 'read-write' }),
        await w('PATCH', `/api/links/${c}`, { long_url: 'https://example.com/r' }), await w('DELETE', `/api/links/${c}`)];
    }, code + '-b');
    equal(statuses.join(' '), 'read 403 403 403', 'scope, POST, PATCH, DELETE');
    await rctx.close();
  });

  await step('360 px wide: no horizontal scroll on the list', async () => {
    const pctx = await browser.newContext({ viewport: { width: 360, height: 740 }, userAgent: DESKTOP_UA });
    const pp = await pctx.newPage();
    await signIn(pp, UI, READ_KEY);
    await pp.locator('tbody tr').first().waitFor();
    for (const hash of ['#/links', `#/links/${code}`, '#/overview']) {
      await pp.goto(UI + hash);
      await pp.locator('main h1').waitFor();
      await pp.waitForLoadState('networkidle');
      const w = await pp.evaluate(() => document.scrollingElement.scrollWidth);
      assert(w <= 360, `${hash}: scrollWidth ${w} > 360`);
    }
    await pctx.close();
  });

  await step('keyboard: Tab reaches the labelled key field and the submit', async () => {
    const kctx = await browser.newContext({ userAgent: DESKTOP_UA });
    const kp = await kctx.newPage();
    await kp.goto(UI);
    await kp.getByLabel('API key').waitFor();
    // Start the Tab sequence from the page's heading, as after a click on it.
    await kp.getByRole('heading', { name: 'Sign in' }).click();
    const seen = [];
    for (let i = 0; i < 6 && !seen.includes('BUTTON:Sign in'); i++) {
      await kp.keyboard.press('Tab');
      seen.push(await kp.evaluate(() => { const a = document.activeElement; return a.tagName + ':' + (a.id || a.textContent.trim()); }));
    }
    assert(seen.includes('INPUT:key') && seen.indexOf('INPUT:key') < seen.indexOf('BUTTON:Sign in'), 'Tab order ' + seen.join(' > '));
    await kp.getByLabel('API key').focus();
    await kp.keyboard.type(READ_KEY);
    await kp.keyboard.press('Enter');
    await kp.locator('header.bar').waitFor({ state: 'visible' });
    await kp.goto(UI + '#/links');
    await kp.locator('#q').waitFor();
    const unlabelled = await kp.locator('main').evaluate((m) => [...m.querySelectorAll('input, select, textarea')]
      .filter((e) => !e.labels.length && !e.getAttribute('aria-label')).map((e) => e.name));
    equal(unlabelled.join(','), '', 'controls without a label');
    await kctx.close();
  });

  console.log('RESULT ' + JSON.stringify({ code, shortURL, scanned, redirects, qr: 1, other: OTHER }));
} catch (e) {
  process.exitCode = 1;
} finally {
  summary();
  await http.dispose();
  await browser.close();
}
