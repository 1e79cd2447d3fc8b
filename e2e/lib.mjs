// What the browser scripts share: Debian's Chromium through playwright-core
// (never a downloaded browser), steps that report their time, sign-in, and
// bounded polling.
import { chromium, request } from 'playwright-core';

// A desktop Chrome's user agent: the clicks the pages make count as people.
export const DESKTOP_UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36';

export function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

// launch starts Chromium; with host and addr ("127.0.0.1:port"), the
// browser reaches host (over plain HTTP, no upgrade to HTTPS) at addr.
export async function launch(host, addr) {
  const args = host ? [`--host-resolver-rules=MAP ${host} ${addr}`, '--disable-features=HttpsUpgrades'] : [];
  return chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args });
}

// plainHTTP is a client without cookies that does not follow redirects.
export async function plainHTTP() {
  return request.newContext({ maxRedirects: 0, userAgent: DESKTOP_UA });
}

let failed = 0;
let n = 0;

// step runs fn and prints "ok N - name (ms)" or "not ok N - name: error".
export async function step(name, fn) {
  n++;
  const t0 = Date.now();
  try {
    const v = await fn();
    console.log(`ok ${n} - ${name} (${Date.now() - t0} ms)`);
    return v;
  } catch (e) {
    failed++;
    console.log(`not ok ${n} - ${name}: ${e && e.stack ? e.stack : e}`);
    throw e;
  }
}

export function summary() {
  console.log(`${n - failed} passed, ${failed} failed`);
}

export function assert(cond, msg) {
  if (!cond) throw new Error('assertion failed: ' + msg);
}

export function equal(got, want, what) {
  if (got !== want) throw new Error(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

// poll calls fn until it returns a truthy value, at most ms; the last
// value and error are in the message when it gives up.
export async function poll(what, ms, fn) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e.message;
    }
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what} (last: ${JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// signIn opens the dashboard at url and signs in with key.
export async function signIn(page, url, key) {
  await page.goto(url);
  await page.getByLabel('API key').waitFor();
  assert(await page.locator('header.bar').isHidden(), 'the bar (links, sign out) is hidden before signing in');
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('header.bar').waitFor({ state: 'visible' });
}

// kpi reads a number off a page's figures by its label (e.g. "Clicks").
export async function kpi(page, label) {
  const text = await page.locator('[data-kpis] .kpi', { hasText: label }).first().locator('b').textContent();
  return Number(text.replace(/[^0-9]/g, ''));
}
