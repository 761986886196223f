// report.js - the Report page: analyze's JSON report (api/report is
// `callsight analyze DIR --format json`, byte for byte) as its header line
// and notes, the sources' loss, and the function table: sortable by any
// column (click its head; again for the other order), filtered by a
// substring of the name or file.
import { h, ns, count, link } from './dom.js';
import { get } from './api.js';

const columns = [
  ['calls', 'calls', count],
  ['incl_ns', 'inclusive', ns],
  ['self_ns', 'self', ns],
  ['self_pct', 'self %', (v) => v.toFixed(1)],
  ['mean_ns', 'mean', ns],
  ['min_ns', 'min', ns],
  ['p50_ns', 'p50', ns],
  ['p90_ns', 'p90', ns],
  ['p99_ns', 'p99', ns],
  ['max_ns', 'max', ns],
  ['name', 'function', null],
  ['where', 'file:line', null],
];

function header(r) {
  const s = r.summary;
  return `events=${s.events} threads=${s.threads} functions=${s.functions} ` +
    `span=${(s.span_ns / 1e9).toFixed(6)}s unmatched_exits=${s.unmatched_exits} ` +
    `unclosed_enters=${s.unclosed_enters} dropped=${s.dropped}`;
}

function sourcesTable(sources) {
  const lossy = sources.filter((x) => x.dropped || x.cuts || x.gaps || x.thread_lost || x.others_lost);
  if (!lossy.length) return null;
  const cols = ['kind', 'id', 'dropped', 'thread_lost', 'others_lost', 'gaps', 'gap_events', 'cuts', 'resumes'];
  return h('table', { id: 'sources', class: 'small' },
    h('thead', {}, h('tr', {}, cols.map((c) => h('th', {}, c)))),
    h('tbody', {}, lossy.map((x) => h('tr', {}, cols.map((c) => h('td', { class: c === 'kind' ? '' : 'num' }, x[c] ?? ''))))));
}

export async function render(params) {
  const t = params.get('t');
  const r = await get('report', { t });
  const self = r.functions.reduce((a, f) => a + f.self_ns, 0) || 1;
  const rows = r.functions.map((f) => ({
    ...f,
    self_pct: (100 * f.self_ns) / self,
    where: f.file ? f.file.replace(/^.*\//, '') + (f.line ? ':' + f.line : '') : '',
  }));
  const state = { key: params.get('sort') || 'self_ns', desc: params.get('order') !== 'asc', filter: params.get('filter') || '' };
  const tbody = h('tbody');
  const count_el = h('span', { id: 'shown' });
  const heads = columns.map(([key, label]) => h('th', { 'data-key': key, onclick: () => sortBy(key) }, label));

  function draw() {
    const f = state.filter.toLowerCase();
    const shown = rows.filter((x) => !f || x.name.toLowerCase().includes(f) || (x.file || '').toLowerCase().includes(f));
    const k = state.key;
    shown.sort((a, b) => {
      const x = a[k], y = b[k];
      const c = typeof x === 'string' || typeof y === 'string' ? String(x ?? '').localeCompare(String(y ?? '')) : (x ?? -1) - (y ?? -1);
      return state.desc ? -c : c;
    });
    heads.forEach((th) => th.className = th.dataset.key === k ? (state.desc ? 'sorted desc' : 'sorted asc') : '');
    tbody.replaceChildren(...shown.map((x) => h('tr', { 'data-name': x.name, 'data-calls': x.calls, 'data-self': x.self_ns, 'data-incl': x.incl_ns },
      columns.map(([key, , fmt]) => {
        if (key === 'name')
          return h('td', { class: 'name' }, h('a', { href: link('function', { t, addr: x.addr, bin: x.binary || '' }) }, x.name));
        if (key === 'where') return h('td', { class: 'where', title: x.file || '' }, x.where);
        return h('td', { class: 'num', 'data-v': x[key] ?? '' }, x[key] === null || x[key] === undefined ? '' : fmt(x[key]));
      }))));
    count_el.replaceChildren(`${shown.length} of ${rows.length} functions`);
  }
  function sortBy(key) {
    state.desc = state.key === key ? !state.desc : key !== 'name' && key !== 'where';
    state.key = key;
    draw();
  }
  const filter = h('input', { id: 'filter', type: 'search', placeholder: 'filter: name or file', value: state.filter,
    oninput: (e) => { state.filter = e.target.value; draw(); } });
  draw();
  return h('section', {},
    h('h1', {}, 'Report: ', r.title || ''),
    h('p', { class: 'mono', id: 'summary' }, header(r)),
    h('ul', { id: 'notes', class: 'notes' }, (r.notes || []).map((n) => h('li', {}, 'note: ' + n))),
    sourcesTable(r.sources || []),
    h('div', { class: 'toolbar' }, filter, ' ', count_el, ' ',
      h('a', { href: link('flame', { t }) }, 'flame graph')),
    h('table', { id: 'report' }, h('thead', {}, h('tr', {}, heads)), tbody));
}
