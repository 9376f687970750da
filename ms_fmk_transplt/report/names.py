"""Report file names, never colliding with a file of the user's project."""

from __future__ import annotations

REPORTS = (
    "change_list.csv",
    "msFmkTranspltlog.txt",
    "unsupported_op.xlsx",
    "unsupported_op.csv",
    "advice.csv",
    "report.html",
)


def alternative(name: str, n: int) -> str:
    """``change_list.csv`` -> ``change_list.msft.csv`` (n=1), ``change_list.msft2.csv`` (n=2)..."""
    stem, dot, suffix = name.rpartition(".")
    tag = "msft" if n == 1 else f"msft{n}"
    return f"{stem}.{tag}{dot}{suffix}"


def report_names(
    user_files: set[str],
    distributed: bool = False,
    analyse: bool = False,
    library: bool = False,
    kit_files: tuple[str, ...] = (),
) -> dict[str, str]:
    names = {}
    extra = (("run_distributed_npu.sh",) if distributed else ()) + (
        ("effort.csv",) if analyse else ()
    )
    extra += ("library_api.csv",) if library else ()
    extra += kit_files
    for report in REPORTS + extra:
        name, n = report, 0
        while name in user_files:
            n += 1
            name = alternative(report, n)
        names[report] = name
    return names
