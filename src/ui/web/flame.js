// flame.js - the Flame graph: api/flame's tree (analyze's folded stacks,
// threads at the bottom, what is too small to see left out by the server),
// drawn as SVG rectangles.  Click a frame to zoom on it (its ancestors
// stay, full width), search to highlight the frames whose name holds the
// text, Reset to see everything again.
import { h, svg, ns } from './dom.js';
import { get } from './api.js';

const ROW = 18, W = 1200;

function layout(node, depth, out, parent) {
  const n = { node, depth, parent, x: 0, w: 0 };
  out.push(n);
  n.kids = (node.children || []).map((c) => layout(c, depth + 1, out, n));
  return n;
}

// x and width of every frame, the chosen one filling the width.
function place(root, focus) {
  for (let a = focus; a; a = a.parent) { a.x = 0; a.w = W; }
  const down = (n) => {
    let x = n.x;
    for (const k of n.kids) {
      k.x = x;
      k.w = n.node.total ? (n.w * k.node.total) / n.node.total : 0;
      x += k.w;
      down(k);
    }
  };
  for (let a = focus; a; a = a.parent) if (a === focus) down(a);
  // Frames outside the focus' subtree and not its ancestors are hidden.
  const keep = new Set();
  for (let a = focus; a; a = a.parent) keep.add(a);
  const mark = (n) => { keep.add(n); n.kids.forEach(mark); };
  mark(focus);
  return keep;
}

function colour(name) {
  let v = 0;
  for (let i = 0; i < name.length; i++) v = (v * 31 + name.charCodeAt(i)) >>> 0;
  return `hsl(${20 + (v % 40)}, ${60 + (v % 25)}%, ${55 + (v % 15)}%)`;
}

export async function render(params) {
  const t = params.get('t');
  const d = await get('flame', { t, max: 4000 });
  const all = [];
  const root = layout(d.root, 0, all, null);
  const depth = Math.max(...all.map((n) => n.depth)) + 1;
  const H = depth * ROW + 4;
  const plot = svg('svg', { id: 'flame', width: W, height: H, viewBox: `0 0 ${W} ${H}` });
  const info = h('p', { id: 'info', class: 'mono' }, `${ns(d.root.total)} in all; ${d.nodes} frames, ${d.omitted} too small to draw`);
  const search = h('input', { id: 'search', type: 'search', placeholder: 'search: highlight frames', oninput: () => draw(focus) });
  let focus = root;

  function draw(f) {
    focus = f;
    const keep = place(root, f);
    const q = search.value.toLowerCase();
    let hits = 0;
    plot.replaceChildren(...all.filter((n) => keep.has(n) && n.w >= 0.5).map((n) => {
      const hit = q && n.node.name.toLowerCase().includes(q);
      if (hit) hits++;
      const y = H - (n.depth + 1) * ROW;
      const g = svg('g', { class: 'frame' + (hit ? ' hit' : '') + (n === f ? ' focus' : ''), 'data-name': n.node.name,
        onclick: () => draw(n) },
        svg('rect', { x: n.x, y, width: Math.max(n.w - 0.5, 0.5), height: ROW - 1, fill: hit ? '#c3f' : colour(n.node.name) }),
        svg('title', {}, `${n.node.name}\ninclusive ${ns(n.node.total)}, self ${ns(n.node.self)}` +
          (n.node.hidden ? `, ${ns(n.node.hidden)} in frames too small to draw` : '')));
      if (n.w > 40) g.append(svg('text', { x: n.x + 3, y: y + ROW - 5, class: 'label' }, fit(n.node.name, n.w)));
      return g;
    }));
    info.replaceChildren(`${f.node.name}: inclusive ${ns(f.node.total)}, self ${ns(f.node.self)}` +
      (q ? `; ${hits} frames match` : '') + `; ${d.omitted} frames too small to draw`);
  }
  draw(root);
  return h('section', {},
    h('h1', {}, 'Flame graph'),
    h('div', { class: 'toolbar' }, search, ' ', h('button', { id: 'reset', onclick: () => { search.value = ''; draw(root); } }, 'Reset')),
    info, h('div', { class: 'scroll' }, plot));
}

function fit(name, w) {
  const chars = Math.floor((w - 6) / 7);
  return name.length <= chars ? name : name.slice(0, Math.max(chars - 1, 1)) + '…';
}
