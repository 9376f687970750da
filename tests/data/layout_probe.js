// Appended to a copy of report.html by tests/test_html_report.py: after the page's own script ran,
// open the first changed file's diff and the first open-work excerpt, measure the layout and
// write the numbers as JSON into a pre element, id layout-result (read back from --dump-dom).
(function () {
  function box(el) { return el.getBoundingClientRect(); }
  function textTop(line) {  // the top of the code text of an excerpt line (not its number)
    const node = Array.from(line.childNodes).find(function (n) {
      return n.nodeType === Node.TEXT_NODE && n.textContent.trim();
    });
    if (!node) return null;
    const range = document.createRange(); range.selectNodeContents(node);
    return range.getBoundingClientRect().top;
  }
  function codeShare(details) {  // each code cell of a changed row / the table's width
    const table = details.querySelector('table.diff');
    const cell = table.querySelector('td.add') || table.querySelector('tr.add td.text');
    const row = cell.parentNode;
    return Array.from(row.querySelectorAll('td.text')).map(function (c) {
      return box(c).width / box(table).width;
    });
  }
  const out = {};
  const file = document.querySelector('details.file');
  const place = document.querySelector('#open-work details');
  file.open = true; place.open = true;
  setTimeout(function () {  // after the toggle events rendered the diff
    out.unified = codeShare(file);
    const mode = document.getElementById('diff-mode');
    mode.value = 'split'; mode.dispatchEvent(new Event('change'));
    out.split = codeShare(file);
    out.excerpt = Array.from(place.querySelectorAll('pre.excerpt > span')).map(function (l) {
      return { number: box(l.querySelector('.ln')).top, code: textTop(l), text: l.textContent };
    });
    out.rows = Array.from(document.querySelectorAll('#open-work tbody tr')).map(function (r) {
      const b = box(r); return { top: b.top, bottom: b.bottom, height: b.height };
    });
    const pre = document.createElement('pre'); pre.id = 'layout-result';
    pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
  }, 200);
})();
