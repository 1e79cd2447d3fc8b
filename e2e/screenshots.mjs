// make screenshots: each dashboard page at desktop (1280x800) and phone
// (360x740) widths, on the fixed data of shortener/ui_screenshots_test.go
// (TestUIScreenshots, which runs this). Env: BASE (the server, which the
// browser reaches as http://sho.rt so that the pictures hold no port), UI,
// KEY, NOW (the server's clock, given to the browser), CODE (the link to
// show), OUT.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { env, launch, step, summary, signIn } from './lib.mjs';

const HOST = 'sho.rt', UI = `http://${HOST}${env('UI')}`, KEY = env('KEY'), NOW = new Date(env('NOW')), CODE = env('CODE'), OUT = env('OUT');
const sizes = { desktop: { width: 1280, height: 800 }, phone: { width: 360, height: 740 } };

// pages: name, hash, what to wait for, full page or the viewport.
const pages = [
  ['links', '#/links', async (p) => { await p.locator('tbody tr').first().waitFor(); }, false],
  ['new', '#/new', async (p) => { await p.getByLabel('Destination URL').waitFor(); }, false],
  ['link', `#/links/${CODE}`, async (p) => {
    await p.locator('[data-dim="country"] li').first().waitFor();
    await p.locator('[data-dim="browser"] li').first().waitFor();
    await p.locator('#hist-h + *').waitFor();
    await p.locator('.qr img').evaluate((img) => img.complete || new Promise((r) => { img.onload = r; }));
    await p.mouse.move(0, 0); // no bar under the pointer: the readout tells the focused one
    await p.locator('.chart rect.hit').last().focus();
  }, true],
  ['overview', '#/overview', async (p) => { await p.locator('.kpis').waitFor(); }, true],
];

const browser = await launch(HOST, new URL(env('BASE')).host);
try {
  await mkdir(OUT, { recursive: true });
  for (const [size, viewport] of Object.entries(sizes)) {
    const ctx = await browser.newContext({ viewport, deviceScaleFactor: 1, locale: 'en-US', timezoneId: 'UTC', colorScheme: 'light', reducedMotion: 'reduce' });
    ctx.setDefaultTimeout(15000);
    const page = await ctx.newPage();
    await page.clock.setFixedTime(NOW);
    await step(`signin-${size}.png`, async () => {
      await page.goto(UI);
      await page.getByLabel('API key').waitFor();
      await page.screenshot({ path: join(OUT, `signin-${size}.png`) });
    });
    await signIn(page, UI, KEY);
    for (const [name, hash, ready, fullPage] of pages) {
      await step(`${name}-${size}.png`, async () => {
        await page.goto(UI + hash);
        await ready(page);
        await page.waitForLoadState('networkidle');
        await page.screenshot({ path: join(OUT, `${name}-${size}.png`), fullPage });
      });
    }
    await ctx.close();
  }
} catch {
  process.exitCode = 1;
} finally {
  summary();
  await browser.close();
}
