// make bench: how long the links list takes to render 50 links after their
// data arrives (issue 18's target: 200 ms or less; reported, not asserted).
// Run by shortener/ui_render_bench_test.go (TestUIListRender, build tag
// uibench). Each run reloads the list; in the page, the API answer's
// responseEnd (Resource Timing) is the start, the 50th row in the table
// (MutationObserver) and the end of the frame after it (requestAnimationFrame
// then a task) the ends. Env: BASE, UI, KEY, RUNS. Prints the median and
// the slowest of the runs after a warm-up one, and a RESULT line.
import { env, launch, step, summary, signIn } from './lib.mjs';

const UI = env('BASE') + env('UI'), KEY = env('KEY'), RUNS = Number(process.env.RUNS || 20);

// watch runs in the page before its scripts.
function watch() {
  const m = (window.__render = {});
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) if (/\/links\?/.test(e.name) && !m.arrived) m.arrived = e.responseEnd;
  }).observe({ type: 'resource', buffered: true });
  new MutationObserver((_, obs) => {
    if (document.querySelectorAll('table.links tbody tr').length < 50) return;
    obs.disconnect();
    m.rows = performance.now();
    requestAnimationFrame(() => setTimeout(() => { m.painted = performance.now(); }));
  }).observe(document, { childList: true, subtree: true });
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

const browser = await launch();
try {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  await signIn(page, UI, KEY);
  await ctx.addInitScript(watch);
  const rows = [], painted = [];
  await step(`${RUNS} loads of the list of 50 links`, async () => {
    for (let i = 0; i <= RUNS; i++) {
      await page.goto(UI + '#/links');
      await page.reload();
      const m = await page.waitForFunction(() => window.__render.painted && window.__render.arrived && window.__render, null, { timeout: 10000 }).then((h) => h.jsonValue());
      if (i === 0) continue; // warm-up
      rows.push(m.rows - m.arrived);
      painted.push(m.painted - m.arrived);
    }
  });
  const r = (x) => Math.round(x * 10) / 10;
  const out = { runs: RUNS, rows_median_ms: r(median(rows)), rows_max_ms: r(Math.max(...rows)), painted_median_ms: r(median(painted)), painted_max_ms: r(Math.max(...painted)) };
  console.log(`list of 50 links, from the answer's arrival: rows in the table median ${out.rows_median_ms} ms (slowest ${out.rows_max_ms}), frame drawn median ${out.painted_median_ms} ms (slowest ${out.painted_max_ms}), ${RUNS} runs`);
  console.log('RESULT ' + JSON.stringify(out));
} catch {
  process.exitCode = 1;
} finally {
  summary();
  await browser.close();
}
