"""The inline CSS and JavaScript of report.html (no network: nothing is fetched), and ``esc``, the
one way text reaches a page's markup (report.html, the zoo's page). The script only ever puts
user code into the page through ``textContent``, never as HTML."""

import html


def esc(text: object) -> str:
    """``text`` as HTML text or a quoted attribute value (``&``, ``<``, ``>``, both quotes)."""
    return html.escape(str(text), quote=True)


CSS = """
:root { --bg:#fff; --fg:#1d2430; --muted:#5b6472; --line:#d9dee5; --head:#f3f5f8;
  --manual:#b42318; --caveat:#b54708; --advice:#175cd3; --add:#e6f4ea; --del:#fde8e8; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
  color: var(--fg); background: var(--bg); }
header { padding: 14px 24px; background: #14213d; color: #fff; }
header h1 { margin: 0 0 4px; font-size: 20px; }
header .run { color: #cdd5e0; font-size: 12.5px; }
main { padding: 12px 24px 40px; max-width: 1500px; }
h2 { font-size: 17px; margin: 26px 0 8px; border-bottom: 1px solid var(--line); }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 12px 0; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 8px 14px; min-width: 120px; }
.card b { display: block; font-size: 22px; }
.card.manual b { color: var(--manual); } .card.caveat b { color: var(--caveat); }
.card.advice b { color: var(--advice); }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left;
  vertical-align: top; }
th { background: var(--head); position: sticky; top: 0; cursor: default; }
th.sort { cursor: pointer; } th.sort::after { content: " \\2195"; color: var(--muted); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.filters { display: flex; flex-wrap: wrap; gap: 8px; margin: 8px 0; align-items: center; }
.filters select, .filters input { font: inherit; padding: 2px 4px; }
.action-manual { color: var(--manual); font-weight: 600; }
.action-caveat { color: var(--caveat); font-weight: 600; }
.action-advice { color: var(--advice); font-weight: 600; }
details > summary { cursor: pointer; }
#open-work, #advice { table-layout: fixed; }
#open-work td code, #open-work td a, #advice td code, #advice td a { overflow-wrap: anywhere; }
/* long names only: prose wraps between words */
#open-work td[class^="action-"], #advice td[class^="action-"] { white-space: nowrap; }
#open-work .at, #advice .at { white-space: nowrap; }  /* a location's line number stays whole */
#open-work col.loc, #advice col.loc { width: 20%; }
#open-work col.api, #advice col.api { width: 20%; }
#open-work col.cat, #advice col.cat { width: 11%; } #open-work col.act { width: 5.5em; }
#open-work col.rule, #advice col.rule { width: 14%; }
#open-work a.to-diff, #advice a.to-diff { font-size: 12px; margin-left: 4px; }
#open-work pre.excerpt, #advice pre.excerpt { max-width: 100%; }
#open-work tr.excerpt-row > td, #advice tr.excerpt-row > td { padding-top: 0; }
ul.places { margin: 4px 0; padding-left: 1.2em; }
code, pre, .code { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace;
  font-size: 12.5px; }
pre.excerpt { margin: 4px 0; padding: 4px 0; background: #f8f9fb; border: 1px solid var(--line);
  overflow-x: auto; }
pre.excerpt > span { display: block; padding: 0 8px; white-space: pre; }
pre.excerpt > span.hit { background: #fff4cc; }
pre.excerpt .ln { display: inline-block; min-width: 3em; padding-right: 1em; text-align: right; }
.ln { color: var(--muted); user-select: none; }
.diff { width: 100%; table-layout: fixed; margin: 6px 0 14px;
  font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 12.5px; }
.diff td { border: 0; padding: 0 6px; white-space: pre-wrap; }
.diff td.text { word-break: break-all; }  /* code wraps at the column's edge, as in a terminal */
.diff td.ln { width: 4.5em; text-align: right; white-space: nowrap; }
.diff td.rules { width: 16em; white-space: normal; font-size: 12px; overflow-wrap: anywhere; }
.diff tr.add td.text, .diff td.add { background: var(--add); }
.diff tr.del td.text, .diff td.del { background: var(--del); }
.diff tr.hunk td { background: var(--head); color: var(--muted); }
.bar { fill: #3e6bd6; } .bar.manual { fill: var(--manual); } .bar.caveat { fill: var(--caveat); }
svg text { font-size: 12px; fill: var(--fg); }
.rule-page { border: 1px solid var(--line); border-radius: 8px; padding: 4px 16px; margin: 10px 0; }
.muted { color: var(--muted); }
.hidden { display: none; }
"""

JS = r"""
(function () {
  const blob = document.getElementById('msft-data');
  const data = blob ? JSON.parse(blob.textContent) : { files: [] };
  let mode = 'unified';
  function cell(tr, text, cls) {
    const td = document.createElement('td');
    td.textContent = text === null || text === undefined ? '' : String(text);
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }
  function rulesCell(tr, rules) {
    const td = cell(tr, '', 'rules');
    (rules || []).forEach(function (id, i) {
      if (i) td.appendChild(document.createTextNode(' '));
      const a = document.createElement('a');
      a.href = '#rule-' + id;
      id.split('.').forEach(function (part, j, parts) {  // wraps at its dots
        a.appendChild(document.createTextNode(j < parts.length - 1 ? part + '.' : part));
        if (j < parts.length - 1) a.appendChild(document.createElement('wbr'));
      });
      td.appendChild(a);
    });
  }
  function renderUnified(table, file) {
    file.hunks.forEach(function (h) {
      const head = document.createElement('tr'); head.className = 'hunk';
      const td = cell(head, h.header); td.colSpan = 4; table.appendChild(head);
      h.lines.forEach(function (l) {
        const tr = document.createElement('tr');
        tr.className = l[0] === '+' ? 'add' : l[0] === '-' ? 'del' : '';
        cell(tr, l[1], 'ln'); cell(tr, l[2], 'ln'); cell(tr, l[0] + ' ' + l[3], 'text');
        rulesCell(tr, l[4]); table.appendChild(tr);
      });
    });
  }
  function renderSideBySide(table, file) {
    file.hunks.forEach(function (h) {
      const head = document.createElement('tr'); head.className = 'hunk';
      const td = cell(head, h.header); td.colSpan = 5; table.appendChild(head);
      let dels = [], adds = [];
      function flush() {
        const n = Math.max(dels.length, adds.length);
        for (let i = 0; i < n; i++) {
          const d = dels[i], a = adds[i], tr = document.createElement('tr');
          cell(tr, d ? d[1] : '', 'ln'); cell(tr, d ? d[3] : '', d ? 'del text' : 'text');
          cell(tr, a ? a[2] : '', 'ln'); cell(tr, a ? a[3] : '', a ? 'add text' : 'text');
          rulesCell(tr, (a && a[4]) || (d && d[4]) || []); table.appendChild(tr);
        }
        dels = []; adds = [];
      }
      h.lines.forEach(function (l) {
        if (l[0] === '-') { if (adds.length) flush(); dels.push(l); }
        else if (l[0] === '+') adds.push(l);
        else {
          flush(); const tr = document.createElement('tr');
          cell(tr, l[1], 'ln'); cell(tr, l[3], 'text'); cell(tr, l[2], 'ln');
          cell(tr, l[3], 'text'); cell(tr, ''); table.appendChild(tr);
        }
      });
      flush();
    });
  }
  function render(details) {
    const file = data.files[Number(details.dataset.index)];
    let table = details.querySelector('table.diff');
    if (table) table.remove();
    table = document.createElement('table'); table.className = 'diff';
    const widths = mode === 'unified' ? ['4.5em', '4.5em', '', '16em']
      : ['4.5em', '', '4.5em', '', '14em'];
    const group = document.createElement('colgroup');
    widths.forEach(function (w) {
      const col = document.createElement('col'); if (w) col.style.width = w; group.appendChild(col);
    });
    table.appendChild(group);
    (mode === 'unified' ? renderUnified : renderSideBySide)(table, file);
    details.appendChild(table);
  }
  document.querySelectorAll('details.file').forEach(function (d) {
    d.addEventListener('toggle', function () { if (d.open) render(d); });
  });
  const toggle = document.getElementById('diff-mode');
  if (toggle) toggle.addEventListener('change', function () {
    mode = toggle.value;
    document.querySelectorAll('details.file[open]').forEach(render);
  });
  const filters = ['f-category', 'f-rule', 'f-folder', 'f-text'].map(function (id) {
    return document.getElementById(id);
  });
  // an open location shows its excerpt in a row of its own under the item, as wide as the table
  // (in the Location cell it had a fifth of the width); closed, the excerpt goes back in its cell
  const places = '#open-work td > details, #advice td > details:not(.places)';
  document.querySelectorAll(places).forEach(function (d) {
    d.addEventListener('toggle', function () {
      const row = d.closest('tr'), pre = d.querySelector('pre.excerpt');
      const next = row.nextElementSibling;
      const own = next && next.classList.contains('excerpt-row') ? next : null;
      if (d.open && pre && !own) {
        const wide = document.createElement('tr'), td = document.createElement('td');
        wide.className = 'excerpt-row'; td.colSpan = row.cells.length;
        td.appendChild(pre); wide.appendChild(td); row.after(wide);
      } else if (!d.open && own) {
        const moved = own.querySelector('pre.excerpt');
        if (moved) d.appendChild(moved);
        own.remove();
      }
    });
  });
  function applyFilters() {
    const [cat, rule, folder, text] = filters.map(function (f) { return f ? f.value : ''; });
    const needle = (text || '').toLowerCase();
    const rows = '[data-filterable] > tbody > tr:not(.excerpt-row), details.file';
    document.querySelectorAll(rows).forEach(function (r) {
      const rules = (r.dataset.rules || r.dataset.rule || '').split(' ');
      const ok = (!cat || r.dataset.category === cat)
        && (!rule || rules.includes(rule))
        && (!folder || (r.dataset.folders ? JSON.parse(r.dataset.folders)
          : [r.dataset.folder]).includes(folder))
        && (!needle || r.textContent.toLowerCase().includes(needle));
      r.classList.toggle('hidden', !ok);
      const next = r.nextElementSibling;
      if (next && next.classList.contains('excerpt-row')) next.classList.toggle('hidden', !ok);
    });
    const shown = document.querySelectorAll('#open-work tbody tr:not(.hidden):not(.excerpt-row)')
      .length;
    const count = document.getElementById('open-count');
    if (count) count.textContent = String(shown);
    const advice = document.querySelectorAll('#advice tbody tr:not(.hidden):not(.excerpt-row)');
    const adviceCount = document.getElementById('advice-count');
    if (adviceCount) adviceCount.textContent = String(Array.from(advice).reduce(function (n, r) {
      return n + Number(r.dataset.count || 1);
    }, 0));
  }
  filters.forEach(function (f) { if (f) f.addEventListener('input', applyFilters); });
  document.querySelectorAll('th.sort').forEach(function (th) {
    th.addEventListener('click', function () {
      const table = th.closest('table'), body = table.tBodies[0];
      const i = Array.prototype.indexOf.call(th.parentNode.children, th);
      const numeric = th.classList.contains('num');
      const dir = th.dataset.dir === 'asc' ? -1 : 1; th.dataset.dir = dir === 1 ? 'asc' : 'desc';
      const rows = Array.from(body.rows);
      rows.sort(function (a, b) {
        const x = a.cells[i].textContent, y = b.cells[i].textContent;
        return dir * (numeric ? Number(x) - Number(y) : x.localeCompare(y));
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
  document.querySelectorAll('details.file[open]').forEach(render);
  function openLinkedFile() {  // the page opened at #file-N / #rule-ID, a "diff" or rule link
    if (!location.hash.startsWith('#file-') && !location.hash.startsWith('#rule-')) return;
    const d = document.getElementById(location.hash.slice(1));
    if (d && d.tagName === 'DETAILS') d.open = true;
  }
  openLinkedFile();
  window.addEventListener('hashchange', openLinkedFile);
})();
"""
