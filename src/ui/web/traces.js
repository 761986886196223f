// traces.js - the Traces page: the directories given, each trace's files,
// state and, once analyzed, its sources' loss; tick two to compare them.
import { h, count, link } from './dom.js';
import { get } from './api.js';

async function loss(cell, name) {
  try {
    const s = await get('sources', { t: name });
    const meta = Object.fromEntries(s.meta.map((r) => [r.key, r.value]));
    cell.replaceChildren(`${count(meta.events)} events, ${count(meta.dropped)} lost` +
      (s.sources.some((r) => r.cuts > 0) ? ', cut' : ''));
    cell.dataset.dropped = meta.dropped;
  } catch (e) {
    cell.replaceChildren(h('span', { class: 'error' }, String(e.message || e)));
  }
}

export async function render() {
  const { traces } = await get('traces');
  if (!traces.length) return h('p', {}, 'No trace files in the directories given.');
  const rows = traces.map((t) => {
    const cell = h('td', { class: 'loss' }, h('button', { onclick: () => loss(cell, t.name) }, 'analyze'));
    return h('tr', { 'data-name': t.name },
      h('td', {}, h('input', { type: 'checkbox', class: 'pick', value: t.name })),
      h('td', {}, h('a', { href: link('report', { t: t.name }) }, t.path)),
      h('td', {}, t.mode), h('td', {}, t.state),
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
