"""Batch mode for a model zoo (--zoo): every model folder of the input is migrated into its own
``<model>_msft`` tree with its own reports; one zoo-level summary (CSV and xlsx) lists, per
model, files, changes, unsupported items and failures. A model that cannot be migrated (bad
input) is listed as failed; the others go on."""

from __future__ import annotations

import dataclasses
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from openpyxl import Workbook
from openpyxl.worksheet.worksheet import Worksheet

from ms_fmk_transplt.errors import InternalError, UserError
from ms_fmk_transplt.events import FileStatus
from ms_fmk_transplt.records import ProgressSink, RunOptions, RunResult
from ms_fmk_transplt.report import sheet_style as style
from ms_fmk_transplt.report import zoo_html
from ms_fmk_transplt.report.csv_rows import write_rows
from ms_fmk_transplt.report.links import url_between
from ms_fmk_transplt.report.statistics import needs, open_work, run_buckets
from ms_fmk_transplt.run import shards
from ms_fmk_transplt.run.pipeline import cache_root, check_cache_folder, output_dir, run
from ms_fmk_transplt.safe_names import shown
from ms_fmk_transplt.safety.fs_safety import check_name_length, write_file, write_text
from ms_fmk_transplt.scan.discover import resolve_project, walk

HEADER = (
    "Model",
    "Files",
    "Python files",
    "Changed files",
    "Changes",
    "Unsupported",
    "Needs manual work",
    "Failed files",
    "CUDA-specific items",
    "Conversion rate",
    "Status",
    "Output",
)


@dataclass
class ZooResult:
    root: Path
    rows: list[tuple[Any, ...]]
    summary_csv: Path
    summary_xlsx: Path
    index_html: Path

    @property
    def failed(self) -> int:
        return sum(1 for r in self.rows if r[10] not in ("ok", "needs work"))


# folders of a zoo that are not models even when they hold Python (Sphinx's conf.py, the build
# scripts of C++ code)
NOT_MODELS = frozenset({"docs", "doc", "cpp", "csrc", "third_party"})


def models(root: Path) -> list[Path]:
    """The model folders: sub-folders holding Python code, but ``docs/``, ``cpp/`` ..."""
    return sorted(
        p
        for p in root.iterdir()
        if p.is_dir()
        and not p.name.startswith(".")
        and p.name.lower() not in NOT_MODELS
        and not p.is_symlink()
        and _has_code(p)
    )


def _has_code(folder: Path) -> bool:
    for _, dirs, names in walk(folder):  # (no deeper than a run goes)
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        if any(n.endswith((".py", ".ipynb")) for n in names):
            return True
    return False


def _row(name: str, result: RunResult) -> tuple[Any, ...]:
    b = run_buckets(result)
    failed = result.count(FileStatus.FAILED)
    return (
        name,
        len(result.files),
        sum(1 for f in result.files if f.python),
        result.count(FileStatus.CHANGED),
        len(result.events),
        open_work(result.notices),
        b.manual,
        failed,
        b.total,
        round(b.conversion_rate, 4),
        "some files failed" if failed else "needs work" if b.manual else "ok",
        str(result.output_dir),
    )


def run_zoo(options: RunOptions, progress: ProgressSink | None = None) -> ZooResult:
    root = Path(options.input)
    if not root.is_dir():
        raise UserError(options.input, "--zoo needs a folder whose sub-folders are the models")
    out = Path(options.output)
    summary = out / f"{root.name}_zoo_summary.xlsx"  # the longest name of the summary files
    check_name_length(
        _part_path(root, out, options.shard) if options.shard else summary, "the summary file"
    )
    per_model = dataclasses.replace(options, shard=None)
    found = models(root)
    owned = [m for m in found if shards.owns(options.shard, m.name)]
    if not options.merge_shards and not found:
        raise UserError(
            root,
            "no model sub-folder: a --zoo folder holds one sub-folder of Python code per model "
            "(docs/, cpp/ and hidden folders are not models); to migrate this folder as one "
            "project, run without --zoo",
        )
    _check_not_there(root, out, options, [] if options.merge_shards else owned)
    check_cache_folder(cache_root(options))  # (once: not each model's "not migrated")
    if options.merge_shards:
        return _write_summary(root, out, _merged_rows(root, out, options.merge_shards))
    rows = []
    for model in owned:
        try:
            result = run(dataclasses.replace(per_model, input=str(model)), progress=progress)
            rows.append(_row(shown(model.name), result))
        except UserError as exc:
            rows.append(
                (shown(model.name), 0, 0, 0, 0, 0, 0, 0, 0, 0.0, f"not migrated: {exc.problem}", "")
            )
        except InternalError as exc:  # a bug stopped this model's run; the others go on
            status = f"not migrated: internal error (see {exc.log})"
            rows.append((shown(model.name), 0, 0, 0, 0, 0, 0, 0, 0, 0.0, status, ""))
    if options.shard is not None:
        out.mkdir(parents=True, exist_ok=True)
        part = _part_path(root, out, options.shard)
        write_text(part, json.dumps({"rows": rows}, ensure_ascii=False), errors="surrogateescape")
        return ZooResult(root, rows, part, part, part)
    return _write_summary(root, out, rows)


def _check_not_there(root: Path, out: Path, options: RunOptions, owned: list[Path]) -> None:
    """Like a single project's run: without --overwrite, a run whose output (a model's
    ``<model>_msft``, the zoo summary, or this shard's part) is already there writes nothing."""
    if options.overwrite:
        return
    if options.shard is not None:
        written = [_part_path(root, out, options.shard)]
    else:
        written = [out / f"{root.name}_zoo_{name}" for name in SUMMARY_NAMES]
    per_model = dataclasses.replace(options, shard=None)
    for model in owned:
        try:
            written.append(output_dir(resolve_project(str(model)), per_model))
        except UserError:  # (the model's own run says what is wrong with it)
            continue
    there = [p for p in written if os.path.lexists(p)]
    if there:
        more = f" (and {len(there) - 1} more of this zoo's outputs)" if len(there) > 1 else ""
        raise UserError(there[0], f"already exists{more}; pass --overwrite to replace it")


def _part_path(root: Path, out: Path, shard: tuple[int, int]) -> Path:
    return out / f"{root.name}_zoo_summary{shards.suffix(shard)}.json"


def _merged_rows(root: Path, out: Path, count: int) -> list[tuple[Any, ...]]:
    """The rows of the N parts of a sharded zoo run, in the order a single run lists them."""
    rows: list[tuple[Any, ...]] = []
    for i in range(1, count + 1):
        part = _part_path(root, out, (i, count))
        if not part.is_file():
            raise UserError(
                part, f"part {i} of {count} is missing: run with --zoo --shard {i}/{count} first"
            )
        rows += _part_rows(part)
    order = {shown(model.name): i for i, model in enumerate(models(root))}
    rows.sort(key=lambda r: order.get(r[0], len(order)))
    for i in range(1, count + 1):
        _part_path(root, out, (i, count)).unlink()
    return rows


def _part_rows(part: Path) -> list[tuple[Any, ...]]:
    """The rows of one part's summary, checked: a malformed part is one line, exit 2."""
    try:
        rows = json.loads(part.read_text("utf-8", "surrogateescape"))["rows"]
    except (OSError, ValueError, RecursionError, KeyError, TypeError) as exc:
        raise UserError(part, f"cannot read the rows of this part ({type(exc).__name__})") from exc
    kinds: tuple[Any, ...] = (str, *(int,) * 8, (int, float), str, str)
    for row in rows if isinstance(rows, list) else [None]:
        if not (
            isinstance(row, list)
            and len(row) == len(kinds)
            and all(isinstance(v, k) and not isinstance(v, bool) for v, k in zip(row, kinds))
        ):
            raise UserError(part, "malformed rows in this part of the zoo summary")
    return [tuple(r) for r in rows]


# what a whole zoo run writes beside the models' folders: <zoo>_zoo_<name>
SUMMARY_NAMES = ("summary.csv", "summary.xlsx", "report.html")

NUMERIC = (2, 3, 4, 5, 6, 7, 8, 9, 10)


def totals(rows: list[tuple[Any, ...]]) -> list[Any]:
    """The totals row of the zoo sheet and page: the counts summed, the zoo's conversion rate
    (its converted items over its items: each item weighs the same, not each model), how many
    models need work."""
    needing = sum(1 for r in rows if r[10] != "ok")
    counts = [sum(int(r[i]) for r in rows) for i in range(1, 9)]
    items, manual = counts[7], counts[5]
    rate = round((items - manual) / items, 4) if items else 1.0
    return ["Total", *counts, rate, f"{needing} of {len(rows)} {needs(needing)} work", ""]


def _write_xlsx(path: Path, rows: list[tuple[Any, ...]]) -> None:
    """The zoo sheet: one row per model (its name links to its report.html), a totals row."""
    wb = Workbook()
    ws = cast(Worksheet, wb.active)
    ws.title = "Zoo"
    style.header(ws, HEADER, NUMERIC)
    for row in rows:
        style.body_row(ws, row, NUMERIC)
        ws.cell(row=ws.max_row, column=10).number_format = style.PERCENT
        report = Path(str(row[11])) / "report.html"
        if row[11] and report.is_file():
            style.link(ws.cell(row=ws.max_row, column=1), url_between(report, path.parent))
    style.totals_row(ws, totals(rows), NUMERIC)
    ws.cell(row=ws.max_row, column=10).number_format = style.PERCENT
    style.widths(ws, (40, 8, 8, 8, 8, 8, 8, 8, 8, 8, 30, 60), whole=(1,))
    ws.freeze_panes = "A2"
    ws.auto_filter.ref = f"A1:L{len(rows) + 1}"
    style.printable(ws)
    buffer = io.BytesIO()
    wb.save(buffer)
    write_file(path, buffer.getvalue())


def _write_summary(root: Path, out: Path, rows: list[tuple[Any, ...]]) -> ZooResult:
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / f"{root.name}_zoo_{SUMMARY_NAMES[0]}"
    write_rows(csv_path, HEADER, [(*row[:-1], shown(row[-1])) for row in rows])
    xlsx_path = out / f"{root.name}_zoo_{SUMMARY_NAMES[1]}"
    _write_xlsx(xlsx_path, rows)
    html_path = out / f"{root.name}_zoo_{SUMMARY_NAMES[2]}"
    zoo_html.write(html_path, root.name, HEADER, rows, NUMERIC, totals(rows))
    return ZooResult(root, rows, csv_path, xlsx_path, html_path)
