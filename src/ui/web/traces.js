// traces.js - the Traces page: the directories given, each trace's files,
// state and, once analyzed, its sources' loss; tick two to compare them.
import { h, count, link } from './dom.js';
import { get } from './api.js';

// From the report (analyze's JSON, the part made first: docs/ui.md), and
// then the trace's state again, which the report may have made `cut`.
async function loss(cell, state, name) {
  try {
    const r = await get('report', { t: name });
    const cuts = r.sources.reduce((n, s) => n + (s.cuts || 0), 0);
    const open = r.sources.filter((s) => s.cut_at_end).length;
    cell.replaceChildren(`${count(r.summary.events)} events, ${count(r.summary.dropped)} lost` +
      (open ? `, ${count(open)} cut` : '') + (cuts > open ? `, ${count(cuts - open)} cut and resumed` : ''));
    cell.dataset.dropped = r.summary.dropped;
    const { traces } = await get('traces');
    const now = traces.find((t) => t.name === name);
    if (now) state.replaceChildren(now.state);
  } catch (e) {
    cell.replaceChildren(h('span', { class: 'error' }, String(e.message || e)));
  }
}

export async function render() {
  const { traces } = await get('traces');
  if (!traces.length) return h('p', {}, 'No trace files in the directories given.');
  const rows = traces.map((t) => {
    const state = h('td', { class: 'state' }, t.state);
    const cell = h('td', { class: 'loss' }, h('button', { onclick: () => loss(cell, state, t.name) }, 'analyze'));
    return h('tr', { 'data-name': t.name },
      h('td', {}, h('input', { type: 'checkbox', class: 'pick', value: t.name })),
      h('td', {}, h('a', { href: link('report', { t: t.name }) }, t.path)),
      h('td', {}, t.mode), state,
      h('td', { class: 'num' }, count(t.files)), h('td', { class: 'num' }, count(t.bytes)), cell);
  });
  const diff = () => {
    const picked = [...document.querySelectorAll('#traces input.pick:checked')].map((c) => c.value);
    if (picked.length === 2) location.hash = link('diff', { a: picked[0], b: picked[1] });
  };
  return h('section', {},
    h('h1', {}, 'Traces'),
    h('div', { class: 'toolbar' }, h('button', { id: 'diff', onclick: diff }, 'Diff the two ticked')),
    h('table', { id: 'traces' },
      h('thead', {}, h('tr', {}, ['', 'trace', 'mode', 'state', 'files', 'bytes', 'events and loss'].map((c) => h('th', {}, c)))),
      h('tbody', {}, rows)));
}
