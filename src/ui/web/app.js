// app.js - callsight ui's pages: one document, a page per hash route
// (#/traces, #/report?t=0, #/function?t=0&id=3, #/flame?t=0, #/timeline?t=0,
// #/live?t=0, #/diff?a=0&b=1, #/project).  Each page
// module exports render(main, params) and draws into main from the API.
import { h } from './dom.js';
import * as traces from './traces.js';
import * as report from './report.js';
import * as func from './func.js';
import * as flame from './flame.js';
import * as timeline from './timeline.js';
import * as live from './live.js';
import * as diff from './diff.js';
import * as project from './project.js';

const pages = { traces, report, function: func, flame, timeline, live, diff, project };

function nav(params) {
  const t = params.get('t');
  const items = [['traces', 'Traces'], ['diff', 'Diff'], ['project', 'Project']];
  if (t !== null) items.push(['report', 'Report'], ['flame', 'Flame graph'], ['timeline', 'Timeline'], ['live', 'Live']);
  const el = document.getElementById('nav');
  el.replaceChildren(...items.map(([p, label]) =>
    h('a', { href: '#/' + p + (t !== null && p !== 'traces' ? '?t=' + encodeURIComponent(t) : ''),
             class: location.hash.startsWith('#/' + p) ? 'here' : null }, label)));
}

// What a page that waits for a part made after the report says meanwhile
// (docs/ui.md: the database and the folded stacks are made in the
// background once the report is out, and take longer on a large trace).
const loading = {
  function: 'Loading… (a trace\'s database is made once, after its report: on 10 M events about 15 s)',
  timeline: 'Loading… (a trace\'s database is made once, after its report: on 10 M events about 15 s)',
  flame: 'Loading… (a trace\'s folded stacks are made once, after its report)',
};

let current = 0;

async function route() {
  const m = /^#\/([a-z]+)(?:\?(.*))?$/.exec(location.hash);
  if (!m) {
    location.replace('#/traces');
    return;
  }
  const params = new URLSearchParams(m[2] || '');
  const page = pages[m[1]];
  const main = document.getElementById('main');
  nav(params);
  const mine = ++current;
  delete document.body.dataset.ready; // set again once this page is drawn
  if (!page) {
    main.replaceChildren(h('p', { class: 'error' }, 'No such page: ' + m[1]));
    return;
  }
  main.replaceChildren(h('p', { class: 'loading' }, loading[m[1]] || 'Loading…'));
  try {
    const el = await page.render(params);
    if (mine === current) main.replaceChildren(el);
  } catch (e) {
    if (mine === current) main.replaceChildren(h('p', { class: 'error' }, String(e.message || e)));
  }
  if (mine === current) document.body.dataset.ready = m[1];
}

window.addEventListener('hashchange', route);
route();
