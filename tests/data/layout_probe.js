// Appended to a copy of report.html by tests/test_html_report.py: after the page's own script ran,
// follow the first "diff" link of the open-work table, open every changed file's diff and every
// open-work excerpt, measure the layout, count the elements inside diffs and excerpts (both diff
// modes) and write the numbers as JSON into a pre element, id layout-result (read back from
// --dump-dom).
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
    return Array.from(cell.parentNode.querySelectorAll('td.text')).map(function (c) {
      return box(c).width / box(table).width;
    });
  }
  function breaks(el) {  // the two characters around each line break inside el
    const found = [];
    let before = '', top = null;
    const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      for (let i = 0; i < n.length; i++) {
        const range = document.createRange(); range.setStart(n, i); range.setEnd(n, i + 1);
        const rect = range.getClientRects()[0];  // none for a space collapsed at a break
        if (rect && top !== null && rect.top > top + 2) found.push(before + n.data[i]);
        if (rect) top = rect.top;
        before = n.data[i];
      }
    }
    return found;
  }
  // elements user code would become if a diff or an excerpt were written as HTML
  const FOREIGN = 'h1, b, script, img, iframe, object, embed, style, form, input, details, svg';
  function userCode() {  // what the diffs and excerpts hold: foreign elements, their text
    const boxes = Array.from(document.querySelectorAll('table.diff, pre.excerpt'));
    return {
      diffs: document.querySelectorAll('table.diff').length,
      excerpts: document.querySelectorAll('pre.excerpt').length,
      foreign: boxes.reduce(function (n, b) {
        return n + b.querySelectorAll(FOREIGN).length;
      }, 0),
      diffText: Array.from(document.querySelectorAll('table.diff')).map(function (b) {
        return b.textContent;
      }).join('\n'),
      excerptText: Array.from(document.querySelectorAll('pre.excerpt')).map(function (b) {
        return b.textContent;
      }).join('\n'),
      ran: Boolean(window.msftInjected),  // set by an event handler in user code, if it ever ran
    };
  }
  function shown(el) {  // its box, and whether CSS lets a person see it
    const b = box(el), style = getComputedStyle(el);
    return {
      left: b.left, right: b.right, top: b.top, bottom: b.bottom, width: b.width, height: b.height,
      visible: el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })
        && style.display !== 'none' && style.visibility === 'visible',
    };
  }
  const out = {};
  function finish() {
    const pre = document.createElement('pre'); pre.id = 'layout-result';
    pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
  }
  function numberBreaks() {  // the diffs' line-number cells whose number wraps
    return Array.from(document.querySelectorAll('table.diff td.ln')).filter(function (c) {
      return breaks(c).length > 0;
    }).map(function (c) { return c.textContent; });
  }
  function measure(file, place) {
    out.unified = codeShare(file);
    out.userCode = { unified: userCode() };
    out.numberBreaks = { unified: numberBreaks() };
    const mode = document.getElementById('diff-mode');
    mode.value = 'split'; mode.dispatchEvent(new Event('change'));
    out.split = codeShare(file);
    out.userCode.split = userCode();
    out.numberBreaks.split = numberBreaks();
    const next = place.closest('tr').nextElementSibling;  // the row an open excerpt moves to
    const pre = (next && next.querySelector('pre.excerpt')) || place.querySelector('pre.excerpt');
    out.excerptShare = box(pre).width / box(document.getElementById('open-work')).width;
    out.excerpt = Array.from(pre.querySelectorAll(':scope > span')).map(function (l) {
      return { number: box(l.querySelector('.ln')).top, code: textTop(l), text: l.textContent };
    });
    out.viewport = document.documentElement.clientWidth;
    out.excerptRows = Array.from(document.querySelectorAll('#open-work tr.excerpt-row')).map(shown);
    const items = document.querySelectorAll('#open-work tbody tr:not(.excerpt-row)');
    out.rows = Array.from(items).map(function (r) {
      const row = shown(r);
      row.cells = Array.from(r.cells).map(shown);
      return row;
    });
    finish();
  }
  function openAll() {
    const target = out.link && document.getElementById(out.link.slice(1));
    out.linked = Boolean(target && target.open && target.querySelector('table.diff'));
    out.breaks = Array.from(document.querySelectorAll(
      '#open-work summary code, #open-work tbody td:not(:first-child):not(:nth-child(5))'
    )).map(function (c) { return { text: c.textContent, breaks: breaks(c) }; });
    const file = document.querySelector('details.file');
    const place = document.querySelector('#open-work details');
    document.querySelectorAll('details.file, #open-work details').forEach(function (d) {
      d.open = true;
    });
    setTimeout(function () { measure(file, place); }, 200);  // after the toggle events
  }
  const link = document.querySelector('#open-work a.to-diff');
  out.link = link ? link.getAttribute('href') : null;
  if (link) link.click();
  setTimeout(openAll, 200);  // after the hashchange
})();
