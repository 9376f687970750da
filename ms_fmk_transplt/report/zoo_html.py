"""<zoo>_zoo_report.html: the index page of a --zoo run, one row per model with a link to the
model's own report.html (same styling; sortable columns)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ms_fmk_transplt.report.html_assets import CSS, JS, esc
from ms_fmk_transplt.report.links import url_between
from ms_fmk_transplt.safe_names import shown
from ms_fmk_transplt.safety.fs_safety import write_file


def write(
    path: Path,
    zoo: str,
    header: tuple[str, ...],
    rows: list[tuple[Any, ...]],
    numeric: tuple[int, ...],
    totals: list[Any],
) -> None:
    """``rows`` are the zoo summary's (the last column is the model's output folder);
    ``numeric``: the 1-based columns holding numbers (as in the sheet); ``totals``: the sheet's
    totals row."""
    numbers = {header[i - 1] for i in numeric}
    heads = "".join(
        f'<th class="sort{" num" if h in numbers else ""}">{esc(h)}</th>' for h in header[:-1]
    )
    body = []
    for row in rows:
        cells = []
        for name, value in zip(header[:-1], row):
            if name in numbers:
                cells.append(f'<td class="num">{esc(_cell(name, value))}</td>')
            else:
                cells.append(f"<td>{esc(shown(value))}</td>")
        report = Path(str(row[-1])) / "report.html"
        if row[-1] and report.is_file():
            link = url_between(report, path.parent)
            cells[0] = f'<td><a href="{esc(link)}">{esc(shown(row[0]))}</a></td>'
        body.append("<tr>" + "".join(cells) + "</tr>")
    foot = "".join(
        f'<th class="{"num" if h in numbers else ""}">{esc(_cell(h, v))}</th>'
        for h, v in zip(header[:-1], totals)
    )
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(shown(zoo))}: ms_fmk_transplt zoo report</title><style>{CSS}</style>"
        f"</head><body><header><h1>{esc(shown(zoo))}: model zoo migration</h1>"
        f'<div class="run">{len(rows)} models · open a model for its report</div></header>'
        f'<main><table id="zoo"><thead><tr>{heads}</tr></thead><tbody>{"".join(body)}'
        f"</tbody><tfoot><tr>{foot}</tr></tfoot></table></main><script>{JS}</script>"
        "</body></html>\n"
    )
    write_file(path, page.encode("utf-8"))


def _cell(column: str, value: Any) -> str:
    return f"{float(value):.1%}" if column == "Conversion rate" else shown(value)
