// Issue 35's dashboard in Chromium (run by shortener/ui_rules_browser_test.go,
// TestUIBrowserRules): on a link's page, the rule editor (a device rule; a
// language rule with its own A/B split, moved above it by keyboard; the
// link's A/B split, whose weights must sum to 100), a refusal naming its
// field, the live preview of the unsaved rules, then real visits with a
// phone's, a desktop's and a French desktop's user agent that land where
// the rules say, counted per rule and variant on the page. Env: BASE, UI,
// WRITE_KEY, READ_KEY, OTHER (the destinations' server). Prints a RESULT
// line for the Go test.
import { DESKTOP_UA, env, launch, step, summary, assert, equal, poll, signIn } from './lib.mjs';

const BASE = env('BASE'), UI = BASE + env('UI'), OTHER = env('OTHER');
const WRITE_KEY = env('WRITE_KEY'), READ_KEY = env('READ_KEY');
const code = 'rules-' + Date.now().toString(36);
// The destinations, by name on the other server (the handler runs with
// deny_private off, and refuses its own host as a redirect loop).
const DEST = OTHER.replace('127.0.0.1', 'localhost');
const home = DEST + '/home', destA = DEST + '/phones', destB = DEST + '/b', destC = DEST + '/c';
const destFRa = DEST + '/fr-a', destFRb = DEST + '/fr-b';
const IPHONE_UA = 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1';

const browser = await launch();

// rule is the fieldset of rule n (from 1) in the editor.
const rule = (page, n) => page.locator('fieldset.rule', { has: page.locator('legend', { hasText: new RegExp(`^Rule ${n}$`) }) });
// previewSays waits for the preview to show want (its rule, variant, url).
async function previewSays(page, want) {
  return poll(`the preview shows ${JSON.stringify(want)}`, 5000, async () => {
    const got = Object.fromEntries(await page.locator('.preview-out [data-k]').evaluateAll((els) => els.map((e) => [e.dataset.k, e.textContent])));
    if (!Object.entries(want).every(([k, v]) => (v instanceof RegExp ? v.test(got[k]) : got[k] === v))) throw new Error('it shows ' + JSON.stringify(got));
    return got;
  });
}

try {
  const ctx = await browser.newContext({ userAgent: DESKTOP_UA });
  ctx.setDefaultTimeout(10000);
  const page = await ctx.newPage();
  page.on('pageerror', (e) => console.log('page error: ' + e.message));

  await step('sign in with the write key and create a link', async () => {
    await signIn(page, UI, WRITE_KEY);
    await page.getByRole('link', { name: 'New link' }).click();
    await page.getByLabel('Destination URL').fill(home);
    await page.getByLabel('Custom code (optional)').fill(code);
    await page.getByRole('button', { name: 'Create link' }).click();
    await page.getByRole('heading', { name: 'Targeting' }).waitFor();
    await previewSays(page, { rule: 'none', variant: 'none', url: `${home} (the destination)` });
  });

  await step('a device rule: mobile goes to A', async () => {
    await page.getByRole('button', { name: 'Add rule' }).click();
    const r1 = rule(page, 1);
    await r1.getByRole('checkbox', { name: 'Mobile' }).check();
    await r1.getByLabel('Rule 1 URL', { exact: true }).fill(destA);
  });

  await step('an A/B split: the weights must sum to 100', async () => {
    await page.getByRole('button', { name: 'Add variant' }).last().click();
    await page.getByLabel('Variant 1 URL', { exact: true }).fill(destB);
    await page.getByLabel('Variant 1 weight (%)', { exact: true }).fill('60');
    await page.getByText('An A/B split needs at least 2 variants.').waitFor();
    await page.getByRole('button', { name: 'Add variant' }).last().click();
    await page.getByLabel('Variant 2 URL', { exact: true }).fill(destC);
    await page.getByLabel('Variant 2 weight (%)', { exact: true }).fill('50');
    await page.getByText('The weights sum to 110: they must sum to 100.').waitFor();
    await page.getByRole('button', { name: 'Save targeting' }).click();
    await page.locator('form.targeting .error[role=alert]', { hasText: 'variants: the weights sum to 110' }).waitFor();
    await page.getByLabel('Variant 1 weight (%)', { exact: true }).fill('50');
    await page.getByText('The weights sum to 100.').waitFor();
    equal(await page.getByLabel('Variant 1 name', { exact: true }).inputValue(), 'a', 'the first variant is named a');
    equal(await page.getByLabel('Variant 2 name', { exact: true }).inputValue(), 'b', 'the second variant is named b');
  });

  await step('a second rule, with its own A/B split, moved above the first with the keyboard', async () => {
    await page.getByRole('button', { name: 'Add rule' }).click();
    const r2 = rule(page, 2);
    await r2.getByLabel('Languages (comma-separated)').fill('fr');
    await r2.getByRole('radio', { name: 'A/B split' }).check();
    assert(await r2.getByLabel('Rule 2 URL', { exact: true }).isHidden(), 'a split rule has no URL field');
    for (const [i, name, url, weight] of [[1, 'fr-a', destFRa, '30'], [2, 'fr-b', destFRb, '70']]) {
      await r2.getByRole('button', { name: 'Add variant' }).click();
      await r2.getByLabel(`Rule 2 variant ${i} name`, { exact: true }).fill(name);
      await r2.getByLabel(`Rule 2 variant ${i} URL`, { exact: true }).fill(url);
      await r2.getByLabel(`Rule 2 variant ${i} weight (%)`, { exact: true }).fill(weight);
    }
    await r2.getByText('The weights sum to 100.').waitFor();
    await page.getByRole('button', { name: 'Move rule 2 up' }).focus();
    await page.keyboard.press('Enter');
    await poll('the French rule is first', 3000, async () =>
      (await rule(page, 1).getByLabel('Rule 1 variant 2 URL', { exact: true }).inputValue()) === destFRb);
    equal(await rule(page, 2).getByLabel('Rule 2 URL', { exact: true }).inputValue(), destA, 'the device rule is second');
    assert(await rule(page, 2).getByRole('checkbox', { name: 'Mobile' }).isChecked(), 'the device rule kept its condition');
    const focused = await page.evaluate(() => document.activeElement.getAttribute('aria-label'));
    equal(focused, 'Move rule 1 down', 'the focus follows the moved rule');
  });

  await step('the preview answers for the unsaved rules', async () => {
    await page.getByLabel('Device preset').selectOption('iphone');
    await previewSays(page, { rule: 'rule-2', variant: 'none', url: destA, seen: /^mobile, ios/ });
    await page.getByLabel('Accept-Language').fill('fr-FR, fr;q=0.9');
    const fr = await previewSays(page, { rule: 'rule-1', variant: /^fr-[ab]$/, url: /\/fr-[ab]$/ });
    equal(fr.url, fr.variant === 'fr-a' ? destFRa : destFRb, 'the French variant and its URL');
    await page.getByLabel('Accept-Language').fill('');
    await page.getByLabel('Device preset').selectOption('desktop');
    const got = await previewSays(page, { rule: 'none', variant: /^[ab]$/, url: /\/[bc]$/, seen: /^desktop/ });
    equal(got.url, got.variant === 'a' ? destB : destC, 'the variant and its URL');
    await page.getByLabel('Device preset').selectOption('android');
    await previewSays(page, { rule: 'rule-2', url: destA });
  });

  await step('a refused URL: the server names the field beside the form', async () => {
    await rule(page, 2).getByLabel('Rule 2 URL', { exact: true }).fill(BASE + '/loop');
    await page.getByRole('button', { name: 'Save targeting' }).click();
    const msg = await page.locator('form.targeting .error[role=alert]').filter({ hasText: 'rules[1].url' }).textContent();
    assert(msg.includes('points to this shortener'), 'the message says why: ' + msg);
    equal(await page.evaluate(() => document.activeElement.getAttribute('aria-invalid') === 'true' && document.activeElement.value), BASE + '/loop', 'the refused field is marked and focused');
    await rule(page, 2).getByLabel('Rule 2 URL', { exact: true }).fill(destA);
  });

  const saved = await step('save: the page shows the saved targeting', async () => {
    await page.getByRole('button', { name: 'Save targeting' }).click();
    await page.locator('#hist-h + ol li', { hasText: 'rules' }).first().waitFor();
    equal(await rule(page, 1).getByLabel('Languages (comma-separated)').inputValue(), 'fr', 'rule 1 after saving');
    equal(await rule(page, 1).getByLabel('Rule 1 variant 1 name', { exact: true }).inputValue(), 'fr-a', 'rule 1\'s split after saving');
    equal(await rule(page, 2).getByLabel('Rule 2 URL', { exact: true }).inputValue(), destA, 'rule 2 after saving');
    assert(await rule(page, 2).getByRole('checkbox', { name: 'Mobile' }).isChecked(), 'rule 2 is a device rule');
    const l = await page.evaluate(async (c) => (await fetch(`/api/links/${c}`)).json(), code);
    equal(JSON.stringify(l.variants), JSON.stringify([{ name: 'a', url: destB, weight: 50 }, { name: 'b', url: destC, weight: 50 }]), 'variants');
    return l;
  });

  const visits = await step('follow the short link: a phone lands on A, a desktop on its variant every time, a French visitor on its rule\'s variant', async () => {
    const shortURL = `${BASE}/${code}`;
    const phone = await browser.newContext({ userAgent: IPHONE_UA, viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const pp = await phone.newPage();
    await pp.goto(shortURL);
    equal(pp.url(), destA, 'the iPhone lands on the device rule\'s URL');
    await phone.close();
    const desk = await browser.newContext({ userAgent: DESKTOP_UA });
    const dp = await desk.newPage();
    await dp.goto(shortURL);
    const first = dp.url();
    assert(first === destB || first === destC, 'the desktop lands on a variant: ' + first);
    await dp.goto(shortURL);
    equal(dp.url(), first, 'the same variant on a repeat visit');
    await desk.close();
    const french = await browser.newContext({ userAgent: DESKTOP_UA, locale: 'fr-FR' });
    const fp = await french.newPage();
    await fp.goto(shortURL);
    const fr = fp.url();
    assert(fr === destFRa || fr === destFRb, 'the French visitor lands on a variant of the French rule: ' + fr);
    await french.close();
    return { desktop: first, variant: first === destB ? 'a' : 'b', french: fr, frVariant: fr === destFRa ? 'fr-a' : 'fr-b' };
  });

  await step('the clicks per rule and variant on the page, side by side', async () => {
    await page.goto(`${UI}#/links/${code}`);
    await poll('the tables show the visits', 15000, async () => {
      await page.getByRole('button', { name: 'Show' }).click();
      const cells = async (sel) => {
        await page.locator(sel).waitFor();
        return page.locator(sel).locator('td').allTextContents();
      };
      const r1 = await cells('table.side tr[data-rule="rule-1"]');
      const r2 = await cells('table.side tr[data-rule="rule-2"]');
      const v = await cells(`table.side tr[data-variant="${visits.variant}"]`);
      const f = await cells(`table.side tr[data-variant="${visits.frVariant}"]`);
      return r1[0] === '1' && r2[0] === '1' && v[1] === '2' && f[1] === '1' && [r1, r2, v, f];
    });
    const captions = await page.locator('table.side caption').allTextContents();
    equal(captions.join(', '), 'Rules, A/B split, Rule rule-1: A/B split', 'the tables');
    const other = visits.variant === 'a' ? 'b' : 'a';
    const o = await page.locator(`table.side tr[data-variant="${other}"] td`).allTextContents();
    equal(o.slice(0, 2).join(' '), '50% 0', 'the other variant: weight and clicks');
    const u = await page.locator(`table.side tr[data-variant="${visits.variant}"] td`).nth(2).textContent();
    assert(u === '—' || /^[0-9]+$/.test(u), 'unique visitors, or a dash when not counted: ' + u);
  });

  await step('a read key: the targeting as text, no editor, no preview', async () => {
    const rctx = await browser.newContext({ userAgent: DESKTOP_UA });
    const rp = await rctx.newPage();
    await signIn(rp, UI, READ_KEY);
    await rp.goto(`${UI}#/links/${code}`);
    await rp.locator('ol.rule-summary li').nth(1).waitFor();
    const items = await rp.locator('ol.rule-summary li').allTextContents();
    equal(items.join(' | '), `rule-1: if language fr → A/B split: fr-a 30% → ${destFRa}; fr-b 70% → ${destFRb} | rule-2: if device mobile → ${destA}`, 'the rules as text');
    equal(await rp.getByRole('button', { name: /Save targeting|Add rule|Add variant|Move rule/ }).count(), 0, 'write controls');
    equal(await rp.locator('form.targeting, .preview-out').count(), 0, 'editor and preview');
    await rp.locator('table.side tr[data-rule="rule-2"]').waitFor();
    await rctx.close();
  });

  await step('360 px wide: the editor fits, every control is labelled', async () => {
    const pctx = await browser.newContext({ viewport: { width: 360, height: 740 }, userAgent: DESKTOP_UA });
    const pp = await pctx.newPage();
    await signIn(pp, UI, WRITE_KEY);
    await pp.goto(`${UI}#/links/${code}`);
    await rule(pp, 2).waitFor();
    await pp.locator('table.side').first().waitFor();
    await pp.waitForLoadState('networkidle');
    const w = await pp.evaluate(() => document.scrollingElement.scrollWidth);
    assert(w <= 360, `scrollWidth ${w} > 360`);
    const unlabelled = await pp.locator('main').evaluate((m) => [...m.querySelectorAll('input, select, textarea')]
      .filter((e) => !e.labels.length && !e.getAttribute('aria-label')).map((e) => e.name));
    equal(unlabelled.join(','), '', 'controls without a label');
    await pctx.close();
  });

  console.log('RESULT ' + JSON.stringify({ code, destA, destB, destC, destFRa, destFRb, ...visits, rules: saved.rules }));
} catch (e) {
  process.exitCode = 1;
} finally {
  summary();
  await browser.close();
}
