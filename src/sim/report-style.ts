/**
 * The HTML report's inline style and its one inline script. The page works without the script:
 * `#step=N` shows step N through `:target`. The script adds the filter by node id, keeps
 * `#step=N&node=ID` in the address, and moves between steps with the arrow keys.
 */

/** The stylesheet, inlined in the page. */
export const REPORT_CSS = `
:root { color-scheme: light; --down: #c62828; --suspect: #d99a00; }
* { box-sizing: border-box; }
body { margin: 0; background: #f3f4f6; color: #1f2328; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
.page { max-width: 1280px; margin: 0 auto; padding: 0 20px 20px; }
h1 { font-size: 21px; margin: 14px 0 4px; }
dl { margin: 0; }
.facts { display: flex; flex-wrap: wrap; gap: 2px 18px; font-size: 13px; }
.facts div, .details div { display: flex; gap: 6px; }
dt { color: #57606a; white-space: nowrap; }
dt::after { content: ":"; }
dd { margin: 0; font-weight: 600; }
.story { list-style: none; padding: 0; margin: 8px 0 4px; display: grid; gap: 1px; font-size: 13px; }
.story a { display: block; padding: 1px 8px; border-radius: 6px; color: inherit; text-decoration: none; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.story a:hover, .story a.current { background: #e3e8ef; }
.toolbar { position: sticky; top: 0; z-index: 2; display: flex; flex-wrap: wrap; gap: 6px; align-items: center; padding: 6px 0; background: #f3f4f6; border-bottom: 1px solid #d9dde3; }
.tabs { display: flex; flex-wrap: wrap; gap: 4px; }
.tabs a { padding: 2px 10px; border: 1px solid #c9ced6; border-radius: 14px; background: #fff; color: inherit; text-decoration: none; font-size: 13px; }
.tabs a.current { background: #1f2328; border-color: #1f2328; color: #fff; }
.filter { margin-left: auto; display: flex; gap: 6px; align-items: center; font-size: 13px; }
.filter input { font: inherit; padding: 2px 8px; width: 200px; border: 1px solid #b8bfc8; border-radius: 6px; }
.filter output { color: #0b5cad; min-width: 12em; }
.legend { display: flex; flex-wrap: wrap; gap: 3px 16px; margin: 4px 0 0; padding-top: 4px; border-top: 1px solid #eceef1; font-size: 12.5px; color: #3d444d; }
.key { display: inline-flex; align-items: center; gap: 5px; }
.key .sample { display: inline-block; width: 22px; height: 12px; }
.sw { display: inline-block; width: 14px; height: 12px; border-radius: 2px; background: var(--m); }
.step { display: none; background: #fff; border: 1px solid #d9dde3; border-radius: 10px; padding: 10px 16px 12px; margin: 10px 0 0; scroll-margin-top: 48px; }
html:not(.js) .step:target, html:not(.js) main:not(:has(.step:target)) .step:first-child, .js .step.current { display: block; }
h2 { display: flex; flex-wrap: wrap; align-items: center; gap: 8px; font-size: 18px; margin: 0 0 2px; }
h2 .what { font-size: 15px; font-weight: 400; }
.badge { padding: 1px 10px; border-radius: 11px; background: #616161; color: #fff; font-size: 11.5px; font-weight: 700; letter-spacing: .04em; text-transform: uppercase; }
.badge.healthy { background: #2e7d32; } .badge.degraded { background: #b35300; } .badge.failed { background: #c62828; }
.decision { margin: 0; }
.route-line { margin: 0 0 6px; font: 12.5px ui-monospace, "DejaVu Sans Mono", monospace; color: #333; }
.cp { display: grid; grid-template-columns: 14px 40px minmax(0, 1fr); align-items: center; column-gap: 4px; height: 16px; font-size: 11px; }
.mk { font-weight: 700; line-height: 1; text-align: center; }
.broken > .mk, .broken-key { color: var(--down); }
.suspect > .mk, .suspect-key { color: #9a6b00; }
.lb { overflow: hidden; color: #57606a; white-space: nowrap; text-overflow: ellipsis; font-variant-numeric: tabular-nums; }
.bar { display: flex; gap: 1px; height: 100%; min-width: 0; padding: 2px 0; }
.s { display: flex; align-items: center; min-width: 2px; padding: 0 4px; overflow: hidden; border-radius: 2px; background: var(--m); color: #fff; font-style: normal; font-size: 11px; white-space: nowrap; }
.s.down { border: 1.5px solid var(--down); background: #fbe1e1 repeating-linear-gradient(45deg, rgba(198, 40, 40, .5) 0 2px, transparent 2px 6px); color: var(--down); font-weight: 700; }
.s.suspect { border: 1.5px solid var(--suspect); background: #fff1c4 repeating-linear-gradient(90deg, rgba(217, 154, 0, .55) 0 2px, transparent 2px 5px); color: #5c4100; font-weight: 700; }
.s.absent { border: 1px dashed #8a9099; background: #eee; color: #555; }
.full .s.down::before, .focus .s.down::before { content: "✕\\00a0"; }
.full .s.suspect::before, .focus .s.suspect::before { content: "◆\\00a0"; }
.gap { border: 1px dashed var(--down); background: repeating-linear-gradient(45deg, #f4f4f4 0 3px, #fff 3px 6px); border-radius: 2px; font-style: normal; }
.broken .s:not(.down):not(.absent) { opacity: .4; }
.served > .bar { outline: 2px solid #111; outline-offset: 1px; border-radius: 3px; }
.ghost > .bar { border: 1px dashed #b0b6be; border-radius: 2px; }
.overview { display: grid; gap: 4px; }
.model h3 { display: flex; align-items: center; gap: 6px; margin: 6px 0 2px; font-size: 13px; }
.model h3 small { color: #57606a; font-size: 12px; font-weight: 400; }
.rows { display: grid; grid-template-columns: repeat(auto-fill, minmax(var(--col), 1fr)); column-gap: 14px; }
.full { --col: 380px; } .full .cp { height: 24px; grid-template-columns: 16px 96px minmax(0, 1fr); font-size: 12px; }
.medium { --col: 220px; }
.dense { --col: 110px; } .dense .rows { column-gap: 8px; } .dense .cp { height: 11px; grid-template-columns: 10px minmax(0, 1fr); column-gap: 2px; font-size: 9px; }
.dense .lb { display: none; } .dense .bar { padding: 1px 0; } .dense .s { padding: 0; }
.focus { display: grid; gap: 3px; margin: 4px 0 8px; padding: 6px 10px; border-radius: 8px; background: #f6f7f9; }
.focus .cp { height: 28px; grid-template-columns: 18px 190px minmax(240px, 1fr) minmax(0, 320px); column-gap: 8px; font-size: 12.5px; }
.s small { margin-left: 5px; font-size: .85em; opacity: .85; }
.focus .mk { font-size: 15px; } .focus .lb { color: #1f2328; font-weight: 600; } .focus .s { font-size: 12px; }
.nt, .more { overflow: hidden; color: #57606a; white-space: nowrap; text-overflow: ellipsis; }
.more, .noroute { margin: 0; font-size: 12.5px; } .noroute { color: var(--down); font-weight: 700; }
.nodes { display: flex; flex-wrap: wrap; align-items: center; gap: 4px; margin: 0 0 4px; font-size: 12.5px; }
.nodes .kind { margin-left: 8px; font-weight: 600; }
.chip { padding: 0 6px; border: 1px solid #c9ced6; border-radius: 9px; background: #fff; }
.chip.down { border-color: var(--down); color: var(--down); font-weight: 700; }
.chip.suspect { border-color: var(--suspect); color: #5c4100; font-weight: 700; }
.chip.absent { border-style: dashed; color: #6b7280; }
.details { display: grid; gap: 1px; margin: 8px 0 0; font-size: 12.5px; }
.details dd { font: 12.5px ui-monospace, "DejaVu Sans Mono", monospace; overflow-wrap: anywhere; }
details summary { margin-top: 4px; color: #0b5cad; font-size: 12.5px; cursor: pointer; }
.ids { margin: 2px 0; font: 12px ui-monospace, "DejaVu Sans Mono", monospace; }
.filtering .step [data-nodes]:not(.hit) { opacity: .15; }
.hit { outline: 2px solid #1f6feb; outline-offset: 1px; border-radius: 3px; }
@page { size: A4; margin: 12mm; }
@media print {
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  body { background: #fff; }
  .page { padding: 0; }
  .toolbar, details { display: none; }
  .step { border: 0; padding: 0; }
  .cp, .model h3, .focus { break-inside: avoid; }
}
`;

/** The page's only script: steps by `#step=N`, the node filter, arrow keys. No network, no globals. */
export const REPORT_SCRIPT = `
(() => {
  const root = document.documentElement;
  root.classList.add('js');
  const steps = [...document.querySelectorAll('section.step')];
  const links = [...document.querySelectorAll('a[data-to]')];
  const input = document.getElementById('node-filter');
  const hits = document.getElementById('node-hits');
  let current = 1;
  const read = () => {
    const params = new URLSearchParams(location.hash.slice(1));
    const n = Number(params.get('step'));
    current = Number.isInteger(n) && n >= 1 && n <= steps.length ? n : 1;
    if (params.has('node') && input.value !== params.get('node')) input.value = params.get('node');
  };
  const filter = () => {
    const q = input.value.trim().toLowerCase();
    const step = steps[current - 1];
    root.classList.toggle('filtering', q !== '');
    let copies = 0;
    let nodes = new Set();
    for (const el of document.querySelectorAll('.hit')) el.classList.remove('hit');
    if (q !== '' && step) {
      for (const el of step.querySelectorAll('[data-nodes]')) {
        const ids = el.dataset.nodes.split(' ').filter((id) => id.toLowerCase().includes(q));
        if (ids.length === 0) continue;
        el.classList.add('hit');
        if (el.classList.contains('cp') && !el.closest('.focus')) copies++;
        for (const id of ids) nodes.add(id);
      }
    }
    hits.value = q === '' ? '' : nodes.size + ' node' + (nodes.size === 1 ? '' : 's') + ', in ' + copies + ' cop' + (copies === 1 ? 'y' : 'ies');
  };
  const show = () => {
    read();
    steps.forEach((s, i) => s.classList.toggle('current', i + 1 === current));
    for (const a of links) {
      const on = Number(a.dataset.to) === current;
      a.classList.toggle('current', on);
      if (on) a.setAttribute('aria-current', 'step'); else a.removeAttribute('aria-current');
    }
    filter();
  };
  const go = (n) => {
    const q = input.value.trim();
    history.replaceState(null, '', '#step=' + n + (q === '' ? '' : '&node=' + encodeURIComponent(q)));
    show();
  };
  input.addEventListener('input', () => go(current));
  addEventListener('hashchange', show);
  addEventListener('keydown', (e) => {
    if (e.target === input || e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.key === 'ArrowRight' && current < steps.length) go(current + 1);
    if (e.key === 'ArrowLeft' && current > 1) go(current - 1);
  });
  show();
})();
`;
