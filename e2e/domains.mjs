// Issue 37's dashboard in Chromium (run by
// shortener/ui_domains_browser_test.go, TestUIBrowserDomains): the code
// "same" lives on the default domain, a.example and b.example. The scoped
// key's session picks from a.example alone (no default domain, no Domains
// page) and sees only a.example's link; the unscoped key's session
// switches between the three and sees each one's link (its short URL and
// QR code on that domain), keeps its choice over a reload, creates a link
// on b.example, and on the Domains page creates c.example, edits it, and
// deletes d.example (with a link: refused, then with its links revoked).
// Env: BASE, UI, WRITE_KEY, SCOPED_KEY, SCOPED_FP (the scoped key's
// fingerprint). Prints a RESULT line for the Go test.
import { DESKTOP_UA, env, launch, plainHTTP, step, summary, assert, equal, signIn } from './lib.mjs';

const BASE = env('BASE'), UI = BASE + env('UI');
const WRITE_KEY = env('WRITE_KEY'), SCOPED_KEY = env('SCOPED_KEY'), SCOPED_FP = env('SCOPED_FP');

const browser = await launch();
const http = await plainHTTP();
const bearer = { Authorization: 'Bearer ' + WRITE_KEY };
const dests = { '': 'https://example.com/default', 'a.example': 'https://example.com/on-a', 'b.example': 'https://example.com/on-b' };

// options reads the domain picker's choices.
const options = (page) => page.locator('#domain option').allTextContents();

// listed waits for the links list to show "same" going to want, among n
// links.
async function listed(page, want, n = 1) {
  const row = page.locator('tr[data-code=same]');
  await row.locator('td.url', { hasText: want }).waitFor();
  equal(await page.locator('table.links tbody tr').count(), n, 'links listed');
  return row;
}

// fits checks the page has no horizontal scroll at 360 px and labels its
// controls.
async function fits(page, what) {
  await page.waitForLoadState('networkidle');
  const w = await page.evaluate(() => document.scrollingElement.scrollWidth);
  assert(w <= 360, `${what}: scrollWidth ${w} > 360`);
  const unlabelled = await page.evaluate(() => [...document.querySelectorAll('input, select, textarea')]
    .filter((e) => !e.closest('[hidden]') && !e.labels.length && !e.getAttribute('aria-label')).map((e) => e.name || e.type));
  equal(unlabelled.join(','), '', `${what}: controls without a label`);
}

async function newPage() {
  const ctx = await browser.newContext({ userAgent: DESKTOP_UA });
  ctx.setDefaultTimeout(10000);
  const page = await ctx.newPage();
  page.on('pageerror', (e) => console.log('page error: ' + e.message));
  page.on('dialog', (d) => d.accept());
  return page;
}

let created = '';
try {
  const scoped = await newPage();
  await step('the scoped key: a.example alone in the picker, no default domain, no Domains page', async () => {
    await signIn(scoped, UI, SCOPED_KEY);
    await scoped.locator('.domain-pick').waitFor({ state: 'visible' });
    equal((await options(scoped)).join(','), 'a.example', 'the picker\'s choices');
    equal(await scoped.locator('#domain').inputValue(), 'a.example', 'the chosen domain');
    assert(await scoped.getByRole('link', { name: 'Domains', exact: true }).isHidden(), 'no Domains link');
  });

  await step('the scoped key sees a.example\'s link and no other', async () => {
    const row = await listed(scoped, dests['a.example']);
    equal(await row.getByRole('button', { name: /^Copy / }).getAttribute('aria-label'), 'Copy https://a.example/same', 'the short URL');
    assert(!(await scoped.content()).includes(dests['b.example']), 'b.example\'s link is not shown');
    assert(!(await scoped.content()).includes(dests['']), 'the default domain\'s link is not shown');
    await row.getByRole('link', { name: 'same' }).click();
    await scoped.getByText(dests['a.example'], { exact: true }).waitFor();
    equal(await scoped.locator('dd a[href^="https://"]').first().textContent(), 'https://a.example/same', 'the short URL on its page');
    assert((await scoped.locator('.qr img').getAttribute('src')).includes('domain=a.example'), 'the QR code is a.example\'s');
    await scoped.goto(UI + '#/domains');
    await scoped.getByText('This key is scoped to link domains').waitFor();
  });
  await scoped.context().close();

  const page = await newPage();
  await step('the unscoped key: the default domain and both link domains, the default first', async () => {
    await signIn(page, UI, WRITE_KEY);
    equal((await options(page)).join(','), 'default domain,a.example,b.example', 'the picker\'s choices');
    equal(await page.locator('#domain').inputValue(), '', 'the default domain is chosen');
    await listed(page, dests['']);
  });

  await step('switching domains shows each domain\'s link', async () => {
    for (const host of ['a.example', 'b.example', '', 'a.example']) {
      await page.locator('#domain').selectOption(host);
      const row = await listed(page, dests[host]);
      equal(await row.getByRole('button', { name: /^Copy / }).getAttribute('aria-label'),
        'Copy ' + (host ? `https://${host}/same` : `${BASE}/same`), `the short URL on ${host || 'the default domain'}`);
    }
  });

  await step('a link\'s page is on the chosen domain; another domain goes back to the list', async () => {
    await page.locator('#domain').selectOption('b.example');
    await (await listed(page, dests['b.example'])).getByRole('link', { name: 'same' }).click();
    await page.getByText(dests['b.example'], { exact: true }).waitFor();
    assert((await page.locator('.qr img').getAttribute('src')).includes('domain=b.example'), 'the QR code is b.example\'s');
    await page.locator('#domain').selectOption('a.example');
    await page.waitForURL(/#\/links$/);
    await listed(page, dests['a.example']);
  });

  await step('the choice is kept over a reload; a new link is made on it', async () => {
    await page.locator('#domain').selectOption('b.example');
    await listed(page, dests['b.example']);
    await page.reload();
    await listed(page, dests['b.example']);
    equal(await page.locator('#domain').inputValue(), 'b.example', 'still b.example');
    await page.getByRole('link', { name: 'New link' }).click();
    await page.getByText('On b.example.').waitFor();
    await page.getByLabel('Destination URL').fill('https://example.com/from-page');
    await page.getByLabel('Custom code (optional)').fill('from-page');
    await page.getByRole('button', { name: 'Create link' }).click();
    await page.locator('dd a', { hasText: 'https://b.example/from-page' }).waitFor();
  });

  await step('the Domains page lists both domains', async () => {
    await page.getByRole('link', { name: 'Domains', exact: true }).click();
    await page.getByRole('heading', { name: 'Domains' }).waitFor();
    await page.locator('tr[data-host="a.example"]', { hasText: SCOPED_FP }).waitFor();
    await page.locator('tr[data-host="b.example"]', { hasText: 'every key' }).waitFor();
  });

  created = await step('create a domain: a refusal names its field, then c.example', async () => {
    await page.getByRole('link', { name: 'New domain' }).click();
    await page.getByLabel('Host name').fill('10.0.0.1');
    await page.getByRole('button', { name: 'Create domain' }).click();
    const err = page.locator('main .error[role=alert]');
    await err.filter({ hasText: /^host: / }).waitFor();
    equal(await page.getByLabel('Host name').getAttribute('aria-invalid'), 'true', 'the host is marked');
    await page.getByLabel('Host name').fill('C.Example.');
    await page.getByLabel('Redirect for / (root)').fill('https://example.com/home');
    await page.getByLabel('Redirect for unknown codes').fill('https://example.com/wrong');
    await page.getByLabel(/^Scoped keys/).fill(SCOPED_FP);
    await page.getByRole('button', { name: 'Create domain' }).click();
    await page.getByRole('heading', { name: 'c.example' }).waitFor();
    equal(await page.locator('dd[data-k=keys]').textContent(), SCOPED_FP, 'its keys');
    await page.locator('#domain option', { hasText: 'c.example' }).waitFor({ state: 'attached' });
    return decodeURIComponent(page.url().split('#/domains/')[1]);
  });

  await step('edit it', async () => {
    await page.getByLabel('Redirect for unknown codes').fill('https://example.com/missing');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.locator('.toast', { hasText: 'Saved' }).waitFor();
    await page.locator('dd', { hasText: 'not found → https://example.com/missing' }).waitFor();
  });

  await step('a domain with a link: delete is refused, then its links are revoked and it goes', async () => {
    let r = await http.post(BASE + '/api/domains', { headers: bearer, data: { host: 'd.example' } });
    equal(r.status(), 201, 'd.example created');
    r = await http.post(BASE + '/api/links?domain=d.example', { headers: bearer, data: { long_url: 'https://example.com/on-d', code: 'same' } });
    equal(r.status(), 201, 'a link on d.example');
    await page.goto(UI + '#/domains/d.example');
    await page.getByRole('heading', { name: 'd.example' }).waitFor();
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.locator('main .error[role=alert]').filter({ hasText: /link/ }).waitFor();
    await page.getByRole('button', { name: 'Revoke its links and delete' }).click();
    await page.waitForURL(/#\/domains$/);
    await page.locator('tr[data-host="c.example"]').waitFor();
    equal(await page.locator('tr[data-host="d.example"]').count(), 0, 'd.example is gone');
    equal((await options(page)).join(','), 'default domain,a.example,b.example,c.example', 'the picker\'s choices');
  });

  await step('the Domains pages fit 360 px with their controls labelled', async () => {
    await page.setViewportSize({ width: 360, height: 740 });
    await fits(page, 'the Domains list');
    await page.getByRole('link', { name: 'New domain' }).click();
    await page.getByLabel('Host name').waitFor();
    await fits(page, 'the new domain form');
    await page.goto(UI + '#/links');
    await listed(page, dests['b.example'], 2); // and the page's link
    await fits(page, 'the links list with the picker');
  });
} finally {
  summary();
  await http.dispose();
  await browser.close();
}
console.log('RESULT ' + JSON.stringify({ created }));
