// A bar chart of a timeseries (people and bots stacked), drawn as SVG. Each
// bucket is focusable: hovering or focusing it shows its values in the
// readout line, which screen readers announce.
import { h, svg, fmt } from './dom.js';

const W = 800, H = 200, PAD = 24;

export function barChart(points, granularity) {
  const readout = h('p', { class: 'readout', 'aria-live': 'polite' }, 'Hover or focus a bar to see its numbers.');
  if (!points || !points.length) return h('div', { class: 'card empty' }, 'No clicks in this range.');
  const max = Math.max(1, ...points.map((p) => p.clicks));
  const bw = (W - PAD) / points.length;
  const y = (v) => H - PAD - (v / max) * (H - 2 * PAD);
  const label = (p) => `${bucketName(p.start, granularity)}: ${fmt.format(p.clicks)} clicks (${fmt.format(p.people)} people, ${fmt.format(p.bots)} bots${p.uniques !== undefined ? `, ${fmt.format(p.uniques)} unique` : ''})`;
  const g = svg('g');
  points.forEach((p, i) => {
    const x = PAD + i * bw;
    const show = () => { readout.textContent = label(p); };
    g.append(
      svg('rect', { class: 'bot', x: x + 1, y: y(p.clicks), width: Math.max(1, bw - 2), height: y(p.people) - y(p.clicks) }),
      svg('rect', { class: 'b', x: x + 1, y: y(p.people), width: Math.max(1, bw - 2), height: H - PAD - y(p.people) }),
      svg('rect', { class: 'hit', x, y: PAD / 2, width: bw, height: H - PAD - PAD / 2, tabindex: 0, role: 'img',
        'aria-label': label(p), 'data-clicks': p.clicks, onmouseenter: show, onfocus: show }));
  });
  const axis = svg('line', { x1: PAD, y1: H - PAD, x2: W, y2: H - PAD, stroke: 'currentColor', 'stroke-opacity': 0.3 });
  const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'group', 'aria-label': 'Clicks over time' }, g, axis);
  // The labels are text beside the drawing, which stretches: inside it
  // they would be squeezed on a narrow screen.
  return h('div', { class: 'chart card' },
    h('div', { class: 'axis' }, h('span', {}, `${fmt.format(max)} at most`)), chart,
    h('div', { class: 'axis' }, h('span', {}, bucketName(points[0].start, granularity)),
      h('span', {}, bucketName(points[points.length - 1].start, granularity))),
    readout, h('p', { class: 'muted' }, 'Dark: people. Light: bots.'));
}

function bucketName(iso, granularity) {
  const d = new Date(iso);
  if (granularity === 'hour') return d.toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'short' });
  if (granularity === 'month') return d.toLocaleDateString(undefined, { year: 'numeric', month: 'short' });
  return (granularity === 'week' ? 'week of ' : '') + d.toLocaleDateString(undefined, { dateStyle: 'medium' });
}
