// Issue 36's dashboard in Chromium (run by
// shortener/ui_webhooks_browser_test.go, TestUIBrowserWebhooks): a write
// session creates a webhook endpoint for link.created pointing at the Go
// test's receiver (refusals named beside the form first), copies the
// secret shown once, creates a link, sees its message delivered and its
// attempt (200), replays it and every message since an hour ago, rotates
// the secret (a new one shown), edits the endpoint, disables it, deletes
// another; a read key's session has no Webhooks page; every page fits
// 360 px with its controls labelled. Env: BASE, UI, WRITE_KEY, READ_KEY,
// RECEIVER (the receiver's URL). Prints a RESULT line for the Go test.
import { DESKTOP_UA, env, launch, plainHTTP, step, summary, assert, equal, poll, signIn } from './lib.mjs';

const BASE = env('BASE'), UI = BASE + env('UI'), RECEIVER = env('RECEIVER');
const WRITE_KEY = env('WRITE_KEY'), READ_KEY = env('READ_KEY');
const code = 'hook-' + Date.now().toString(36);

const browser = await launch();
const http = await plainHTTP();
const bearer = { Authorization: 'Bearer ' + WRITE_KEY };

// attempts reads a message page's attempts: their statuses, in order.
async function attempts(page) {
  return page.locator('table.attempts td[data-k=status]').allTextContents();
}

// fits checks the page has no horizontal scroll and labels its controls.
async function fits(page, what) {
  await page.waitForLoadState('networkidle');
  const w = await page.evaluate(() => document.scrollingElement.scrollWidth);
  assert(w <= 360, `${what}: scrollWidth ${w} > 360`);
  const unlabelled = await page.locator('main').evaluate((m) => [...m.querySelectorAll('input, select, textarea')]
    .filter((e) => !e.labels.length && !e.getAttribute('aria-label')).map((e) => e.name || e.type));
  equal(unlabelled.join(','), '', `${what}: controls without a label`);
}

try {
  const ctx = await browser.newContext({ userAgent: DESKTOP_UA });
  ctx.setDefaultTimeout(10000);
  await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: BASE });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => console.log('page error: ' + e.message));
  page.on('dialog', (d) => d.accept());

  await step('sign in with the write key: the Webhooks page, no endpoint yet', async () => {
    await signIn(page, UI, WRITE_KEY);
    await page.getByRole('link', { name: 'Webhooks', exact: true }).click();
    await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
    await page.getByText('No endpoints yet.').waitFor();
  });

  const secret1 = await step('create an endpoint: refusals name their field, then the secret is shown once', async () => {
    await page.getByRole('link', { name: 'New endpoint' }).click();
    await page.getByLabel('Endpoint URL').fill('http://10.1.2.3/in');
    await page.getByRole('checkbox', { name: 'Link created' }).uncheck();
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    const err = page.locator('main .error[role=alert]');
    await err.filter({ hasText: /^url: / }).waitFor();
    assert((await err.textContent()).includes('allow_private'), 'the refusal says why: ' + await err.textContent());
    equal(await page.evaluate(() => document.activeElement.id), 'wh_url', 'the refused URL is focused');
    equal(await page.getByLabel('Endpoint URL').getAttribute('aria-invalid'), 'true', 'the refused URL is marked');
    await page.getByLabel('Endpoint URL').fill(RECEIVER + '/in');
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    await err.filter({ hasText: /^types: at least one event type/ }).waitFor();
    equal(await page.locator('fieldset[data-path=types]').getAttribute('aria-invalid'), 'true', 'the types are marked');
    await page.getByRole('checkbox', { name: 'Link created' }).check();
    await page.getByLabel('Description').fill('the test receiver');
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    await page.getByRole('heading', { name: 'Endpoint created' }).waitFor();
    await page.getByText('Shown this once.').waitFor();
    const s = await page.getByLabel('Signing secret', { exact: true }).inputValue();
    assert(/^whsec_[A-Za-z0-9+/=]+$/.test(s), 'a whsec_ secret: ' + s);
    equal(await page.evaluate(() => document.activeElement.id), 'wh_secret', 'the secret is focused');
    await page.getByRole('button', { name: 'Copy secret' }).click();
    await page.locator('.toast', { hasText: 'Copied the signing secret' }).waitFor();
    equal(await page.evaluate(() => navigator.clipboard.readText()), s, 'the clipboard holds the secret');
    return s;
  });

  const id = await step('open the endpoint: its URL, types and status', async () => {
    await page.getByRole('link', { name: 'Open the endpoint' }).click();
    await page.getByRole('heading', { name: RECEIVER + '/in' }).waitFor();
    equal(await page.locator('dd[data-k=status]').textContent(), 'enabled', 'status');
    assert(!(await page.content()).includes(secret1), 'the secret is not on the endpoint page');
    return decodeURIComponent(page.url().split('#/webhooks/')[1]);
  });

  await step('the list shows it', async () => {
    await page.getByRole('link', { name: 'Webhooks', exact: true }).click();
    const row = page.locator(`tr[data-id="${id}"]`);
    await row.waitFor();
    const cells = await row.locator('td').allTextContents();
    equal(cells.slice(0, 3).join(' | '), `${RECEIVER}/inthe test receiver | link.created | enabled`, 'the row');
    await row.getByRole('link').click();
    await page.getByRole('heading', { name: 'Messages' }).waitFor();
  });

  const msg = await step('create a link: its message is delivered, its attempt answered 200', async () => {
    const r = await http.post(BASE + '/api/links', { headers: bearer, data: { long_url: 'https://example.com/hooked', code } });
    equal(r.status(), 201, 'link created');
    const row = await poll('the message is listed as delivered', 20000, async () => {
      await page.getByRole('button', { name: 'Show' }).click();
      await page.locator('[role=status] .muted', { hasText: 'Loading' }).waitFor({ state: 'detached' });
      const rows = page.locator('table.messages tr[data-state=delivered]');
      return (await rows.count()) === 1 && rows;
    });
    const m = await row.getAttribute('data-id');
    equal((await row.locator('td').allTextContents()).slice(1, 4).join(' | '), 'link.created | delivered | 1', 'the row');
    await row.getByRole('link').click();
    await page.getByRole('heading', { name: 'link.created message' }).waitFor();
    equal((await attempts(page)).join(','), '200', 'the attempts');
    const body = JSON.parse(await page.locator('pre.body').textContent());
    equal(body.type, 'link.created', 'the body\'s type');
    equal(body.data.code, code, 'the body\'s link');
    equal(await page.locator('table.attempts tr[data-n="1"] td').last().textContent(), 'ok', 'the receiver\'s answer');
    return m;
  });

  await step('replay it: a second attempt, 200', async () => {
    await page.getByRole('button', { name: 'Replay this message' }).click();
    await page.locator('.toast', { hasText: 'Sent again shortly' }).waitFor();
    await poll('two attempts', 20000, async () => {
      await page.reload();
      return (await attempts(page)).join(',') === '200,200';
    });
  });

  const secret2 = await step('rotate the secret: a new one is shown once, the old one keeps signing for a day', async () => {
    await page.getByRole('link', { name: '← The endpoint' }).click();
    await page.getByLabel('The current secret keeps signing for').selectOption('86400');
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('heading', { name: 'Its new signing secret' }).waitFor();
    const s = await page.getByLabel('Signing secret', { exact: true }).inputValue();
    assert(/^whsec_/.test(s) && s !== secret1, 'a new secret');
    await page.reload();
    await page.getByText('1 older one also signing until').waitFor();
    equal(await page.getByLabel('Signing secret', { exact: true }).count(), 0, 'the new secret is gone after a reload');
    return s;
  });

  await step('replay every message since an hour ago: a third attempt', async () => {
    const since = await page.evaluate(() => {
      const d = new Date(Date.now() - 3600e3);
      const p = (n) => String(n).padStart(2, '0');
      return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
    });
    await page.getByLabel('Send again every message made since').fill(since);
    await page.getByRole('button', { name: 'Replay', exact: true }).click();
    await page.locator('.toast', { hasText: '1 message to send again' }).waitFor();
    await page.goto(`${UI}#/webhooks/${id}/messages/${msg}`);
    await poll('three attempts', 20000, async () => {
      await page.reload();
      return (await attempts(page)).join(',') === '200,200,200';
    });
  });

  await step('edit: tags and another type; a bad tag is named', async () => {
    await page.goto(`${UI}#/webhooks/${id}`);
    await page.getByRole('heading', { name: 'Edit' }).waitFor();
    await page.getByLabel('Only links with one of these tags (comma-separated)').fill('print, bad tag!');
    await page.getByRole('checkbox', { name: 'Link revoked' }).check();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.locator('main .error[role=alert]', { hasText: /^tags\[1\]: / }).waitFor();
    equal(await page.getByLabel('Only links with one of these tags (comma-separated)').getAttribute('aria-invalid'), 'true', 'the tags are marked');
    await page.getByLabel('Only links with one of these tags (comma-separated)').fill('print');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('links with tags print').waitFor();
    equal((await page.locator('.meta .tag').allTextContents()).join(','), 'link.created,link.revoked', 'the types');
  });

  await step('disable it', async () => {
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.locator('dd[data-k=status]', { hasText: 'disabled: disabled through the API' }).waitFor();
    await page.getByRole('button', { name: 'Enable' }).waitFor();
    await page.getByRole('link', { name: 'Webhooks', exact: true }).click();
    await page.locator(`tr[data-id="${id}"] td`, { hasText: 'disabled: disabled through the API' }).waitFor();
  });

  await step('delete another endpoint, after confirming', async () => {
    const r = await http.post(BASE + '/api/webhooks', { headers: bearer, data: { url: RECEIVER + '/other', types: ['click'] } });
    equal(r.status(), 201, 'second endpoint created');
    const other = (await r.json()).id;
    await page.goto(`${UI}#/webhooks/${other}`);
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.locator(`tr[data-id="${id}"]`).waitFor();
    equal(await page.locator(`tr[data-id="${other}"]`).count(), 0, 'the deleted endpoint is gone');
    equal((await http.get(`${BASE}/api/webhooks/${other}`, { headers: bearer })).status(), 404, 'the API no longer has it');
  });

  await step('keyboard: Tab reaches the new endpoint form\'s URL and Enter submits', async () => {
    await page.goto(`${UI}#/webhooks/new`);
    await page.getByLabel('Endpoint URL').waitFor();
    await page.keyboard.press('Tab');
    equal(await page.evaluate(() => document.activeElement.id), 'wh_url', 'Tab reaches the URL field');
    await page.keyboard.type('http://10.9.9.9/x');
    await page.keyboard.press('Enter');
    await page.locator('main .error[role=alert]', { hasText: /^url: / }).waitFor();
  });

  await step('a read key: no Webhooks entry, and the page says why', async () => {
    const rctx = await browser.newContext({ userAgent: DESKTOP_UA });
    const rp = await rctx.newPage();
    await signIn(rp, UI, READ_KEY);
    equal(await rp.getByRole('link', { name: 'Webhooks', exact: true }).count(), 0, 'the Webhooks entry');
    await rp.goto(`${UI}#/webhooks/${id}`);
    await rp.getByText('Webhooks need a write key').waitFor();
    await rctx.close();
  });

  await step('360 px wide: the list, an endpoint, a message and the form fit, every control labelled', async () => {
    const pctx = await browser.newContext({ viewport: { width: 360, height: 740 }, userAgent: DESKTOP_UA });
    const pp = await pctx.newPage();
    await signIn(pp, UI, WRITE_KEY);
    await pp.goto(`${UI}#/webhooks`);
    await pp.locator(`tr[data-id="${id}"]`).waitFor();
    await fits(pp, 'the list');
    await pp.goto(`${UI}#/webhooks/${id}`);
    await pp.locator('table.messages tr[data-state]').first().waitFor();
    await fits(pp, 'the endpoint');
    await pp.getByRole('button', { name: 'Rotate secret' }).click();
    await pp.getByLabel('Signing secret', { exact: true }).waitFor();
    await fits(pp, 'the endpoint with a new secret');
    await pp.goto(`${UI}#/webhooks/${id}/messages/${msg}`);
    await pp.locator('table.attempts').waitFor();
    await fits(pp, 'the message');
    await pp.goto(`${UI}#/webhooks/new`);
    await pp.getByLabel('Endpoint URL').waitFor();
    await fits(pp, 'the form');
    await pctx.close();
  });

  console.log('RESULT ' + JSON.stringify({ id, msg, code, secret1, secret2 }));
} catch (e) {
  process.exitCode = 1;
} finally {
  summary();
  await browser.close();
}
