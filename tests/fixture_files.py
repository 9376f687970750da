"""The fixture files the engine reports as unreadable (CPython refuses them), and the rest."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "fixtures").rglob("*.py"))
# prefix of the path under fixtures/ -> rule of the one notice reported (copied unchanged)
UNREADABLE = {
    "expected/legacy_gpu_msft/legacy_eval.py": "parse.syntax_error",
    "expected/toolkit_msft/toolkit/legacy_py2.py": "parse.syntax_error",
    "projects/legacy_gpu/legacy_eval.py": "parse.syntax_error",
    "projects/toolkit/toolkit/legacy_py2.py": "parse.syntax_error",
    "rules/parse.decode_error/": "parse.decode_error",
    "rules/parse.limit/": "parse.limit",
    "rules/parse.syntax_error/": "parse.syntax_error",
}


def relative(path: Path) -> str:
    return path.relative_to(ROOT / "fixtures").as_posix()


def unreadable_rule(path: Path) -> str | None:
    """The parse.* rule the engine reports ``path`` with, None for a file it reads."""
    rel = relative(path)
    return next((rule for prefix, rule in UNREADABLE.items() if rel.startswith(prefix)), None)


READABLE = [p for p in FIXTURES if unreadable_rule(p) is None]
# inputs only (no expected outputs): what a user would migrate
READABLE_INPUTS = [
    p
    for p in READABLE
    if not p.name.endswith(".expected.py") and not relative(p).startswith("expected/")
]
