// timeline.js - the Timeline: threads as lanes, calls as bars nested by
// depth, for a window of the trace; frames cut short (lost events, calls
// that never returned) dashed, calls that fired TRACE_TRIGGER marked red.  The server sends only the calls in
// the window long enough to be seen (api/timeline: level of detail), so a
// long trace costs what its window shows.  Zoom with + and - (or the
// mouse wheel), pan with the arrow keys (or the buttons).
import { h, svg, ns, link } from './dom.js';
import { get } from './api.js';

const W = 1200, ROW = 16, LANE_GAP = 10, LABEL = 140;

export async function render(params) {
  const t = params.get('t');
  let from = Number(params.get('from') || 0), to = params.get('to') ? Number(params.get('to')) : null;
  const plot = svg('svg', { id: 'timeline', width: W, height: 100 });
  const info = h('p', { id: 'window', class: 'mono' });
  let busy = false;

  async function load() {
    if (busy) return;
    busy = true;
    try {
      const q = { t, from: Math.round(from), px: W - LABEL };
      if (to !== null) q.to = Math.round(to);
      const d = await get('timeline', q);
      from = d.from; to = d.to;
      draw(d);
    } finally {
      busy = false;
    }
  }

  function draw(d) {
    const span = d.to - d.from;
    const x = (v) => LABEL + ((Math.max(v, d.from) - d.from) / span) * (W - LABEL);
    const lanes = new Map();
    let y = 4;
    for (const th of d.threads) {
      const depth = Math.max(0, ...d.calls.filter((c) => c.thread === th.utid).map((c) => c.depth + 1));
      lanes.set(th.utid, { y, th });
      y += Math.max(depth, 1) * ROW + LANE_GAP;
    }
    plot.setAttribute('height', y);
    plot.setAttribute('viewBox', `0 0 ${W} ${y}`);
    const items = [];
    for (const { y: ly, th } of lanes.values())
      items.push(svg('text', { x: 2, y: ly + 12, class: 'axis' }, `${th.tid}${th.name ? ' ' + th.name : ''}`));
    for (const c of d.calls) {
      const lane = lanes.get(c.thread);
      if (!lane) continue;
      const x0 = x(c.ts), x1 = x(Math.min(c.ts + c.dur, d.to));
      items.push(svg('g', { class: 'call', 'data-name': c.name ?? '' },
        svg('rect', { x: x0, y: lane.y + c.depth * ROW, width: Math.max(x1 - x0, 1), height: ROW - 1 }),
        svg('title', {}, `${c.name ?? '?'}: ${ns(c.dur)} from ${ns(c.ts)}`),
        x1 - x0 > 40 ? svg('text', { x: x0 + 2, y: lane.y + c.depth * ROW + 12, class: 'label' }, c.name ?? '?') : null));
    }
    // Frames cut short (never returned, or standing for frames lost with
    // their events) and the calls that fired TRACE_TRIGGER, marked.
    for (const c of d.cut || []) {
      const lane = lanes.get(c.thread);
      if (!lane) continue;
      const x0 = x(c.ts), x1 = x(Math.min(c.ts + c.dur, d.to));
      const what = c.placeholder ? `${c.placeholder} frame${c.placeholder > 1 ? 's' : ''} lost with their events` : `${c.name ?? '?'}: cut short`;
      items.push(svg('g', { class: 'cut', 'data-name': c.placeholder ? '[lost frames]' : c.name ?? '' },
        svg('rect', { x: x0, y: lane.y + c.depth * ROW, width: Math.max(x1 - x0, 2), height: ROW - 1 }),
        svg('title', {}, `${what}, ${ns(c.dur)} from ${ns(c.ts)}`)));
    }
    for (const g of d.triggers || []) {
      const lane = lanes.get(g.thread);
      if (!lane) continue;
      const x0 = x(g.ts), x1 = x(Math.min(g.ts + g.dur, d.to));
      items.push(svg('rect', { class: 'trigger', x: x0, y: lane.y - 2, width: Math.max(x1 - x0, 2), height: 4 },
        svg('title', {}, `TRACE_TRIGGER fired: ${g.name ?? '?'} took ${ns(g.dur)}`)));
    }
    plot.replaceChildren(...items);
    info.replaceChildren(`${ns(d.from)} to ${ns(d.to)} of ${ns(d.span_ns)}: ${d.calls.length} calls of ${ns(d.min_dur)} or more` +
      ((d.cut || []).length ? `, ${d.cut.length} cut short (dashed)` : '') +
      ((d.triggers || []).length ? `, ${d.triggers.length} trigger calls (red)` : '') +
      (d.truncated ? ' (the longest only: zoom in for the rest)' : ''));
    history.replaceState(null, '', link('timeline', { t, from: d.from, to: d.to }));
  }

  const zoom = (f) => { const mid = (from + to) / 2, half = Math.max(((to - from) * f) / 2, 500); from = Math.max(0, mid - half); to = mid + half; load(); };
  const pan = (f) => { const s = (to - from) * f; if (from + s < 0) { to -= from; from = 0; } else { from += s; to += s; } load(); };
  const keys = (e) => {
    if (!document.getElementById('timeline')) { window.removeEventListener('keydown', keys); return; }
    if (e.key === '+' || e.key === '=') zoom(0.5);
    else if (e.key === '-') zoom(2);
    else if (e.key === 'ArrowLeft') pan(-0.25);
    else if (e.key === 'ArrowRight') pan(0.25);
  };
  window.addEventListener('keydown', keys);
  plot.addEventListener('wheel', (e) => { e.preventDefault(); zoom(e.deltaY < 0 ? 0.8 : 1.25); }, { passive: false });
  await load();
  return h('section', {},
    h('h1', {}, 'Timeline'),
    h('div', { class: 'toolbar' },
      h('button', { onclick: () => pan(-0.25) }, '←'), h('button', { onclick: () => zoom(0.5) }, '+'),
      h('button', { onclick: () => zoom(2) }, '−'), h('button', { onclick: () => pan(0.25) }, '→'),
      h('button', { onclick: () => { from = 0; to = null; load(); } }, 'All')),
    info, h('div', { class: 'scroll' }, plot));
}
