// func.js - a function's page: its figures, its latency histogram (a plot
// on a log scale of time, one bar per bucket of analyze's histogram),
// who calls it and what it calls (counts and time), its slowest calls.
import { h, svg, ns, count, link } from './dom.js';
import { get } from './api.js';

function histogram(hist) {
  const W = 760, H = 220, L = 50, B = 30, T = 10, R = 50;
  if (!hist.length) return h('p', {}, 'No calls.');
  const lo = Math.max(1, Math.min(...hist.map((b) => b.lo_ns)));
  const hi = Math.max(...hist.map((b) => b.hi_ns + 1));
  const x0 = Math.floor(Math.log10(lo)), x1 = Math.max(x0 + 1, Math.ceil(Math.log10(hi)));
  const x = (v) => L + ((Math.log10(Math.max(v, 1)) - x0) / (x1 - x0)) * (W - L - R);
  const maxc = Math.max(...hist.map((b) => b.count));
  const y = (c) => T + (H - T - B) * (1 - c / maxc);
  const g = svg('svg', { id: 'hist', width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img' });
  for (let e = x0; e <= x1; e++) {
    const px = x(10 ** e);
    g.append(svg('line', { x1: px, x2: px, y1: T, y2: H - B, class: 'grid' }),
      svg('text', { x: px, y: H - B + 16, 'text-anchor': 'middle', class: 'axis' }, ns(10 ** e)));
  }
  g.append(svg('text', { x: L - 6, y: T + 10, 'text-anchor': 'end', class: 'axis' }, count(maxc)),
    svg('text', { x: L - 6, y: H - B, 'text-anchor': 'end', class: 'axis' }, '0'));
  for (const b of hist) {
    const bx = x(b.lo_ns), bw = Math.max(3, x(b.hi_ns + 1) - bx);
    g.append(svg('rect', { x: bx, y: y(b.count), width: bw, height: H - B - y(b.count), class: 'bar', 'data-count': b.count },
      svg('title', {}, `${ns(b.lo_ns)} to ${ns(b.hi_ns)}: ${count(b.count)} calls`)));
  }
  return g;
}

function edges(t, id, list, what) {
  if (!list.length) return h('p', {}, `No ${what}.`);
  return h('table', { id: what, class: 'small' },
    h('thead', {}, h('tr', {}, ['function', 'calls', 'time', 'self'].map((c) => h('th', {}, c)))),
    h('tbody', {}, list.map((e) => h('tr', {},
      h('td', { class: 'name' }, e.id === null ? '(outermost)' : h('a', { href: link('function', { t, id: e.id }) }, e.name ?? '?')),
      h('td', { class: 'num' }, count(e.calls)), h('td', { class: 'num' }, ns(e.dur_ns)), h('td', { class: 'num' }, ns(e.self_ns))))));
}

export async function render(params) {
  const t = params.get('t');
  const q = { t };
  for (const k of ['id', 'addr', 'bin']) if (params.get(k)) q[k] = params.get(k);
  const d = await get('function', q);
  const f = d.function[0], s = d.stats[0] || {};
  const figures = [['calls', count(s.calls)], ['inclusive', ns(s.incl_ns)], ['self', ns(s.self_ns)], ['min', ns(s.min_ns)],
    ['mean', ns(s.mean_ns)], ['p50', ns(s.p50_ns)], ['p90', ns(s.p90_ns)], ['p99', ns(s.p99_ns)], ['max', ns(s.max_ns)]];
  return h('section', {},
    h('h1', {}, f.name),
    h('p', { class: 'mono' }, `${f.file ?? '?'}${f.line ? ':' + f.line : ''}  ${f.addr}  ${f.binary ?? ''}`),
    h('dl', { class: 'figures' }, figures.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
    h('h2', {}, 'Latency histogram'), histogram(d.hist),
    h('div', { class: 'cols' },
      h('div', {}, h('h2', {}, 'Callers'), edges(t, d.id, d.callers, 'callers')),
      h('div', {}, h('h2', {}, 'Callees'), edges(t, d.id, d.callees, 'callees'))),
    h('h2', {}, 'Slowest calls'),
    h('table', { id: 'slowest', class: 'small' },
      h('thead', {}, h('tr', {}, ['time', 'self', 'start', 'thread', 'depth'].map((c) => h('th', {}, c)))),
      h('tbody', {}, d.slowest.map((c) => h('tr', {},
        h('td', { class: 'num' }, h('a', { href: link('timeline', { t, from: Math.max(0, c.ts - c.dur), to: c.ts + 2 * c.dur }) }, ns(c.dur))),
        h('td', { class: 'num' }, ns(c.self_dur)), h('td', { class: 'num' }, ns(c.ts)),
        h('td', {}, `${c.tid}${c.thread ? ' (' + c.thread + ')' : ''}`), h('td', { class: 'num' }, c.depth))))));
}
