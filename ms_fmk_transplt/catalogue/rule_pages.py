"""The generated rule pages (docs/rules/<id>.md, shipped in the package as
ms_fmk_transplt/rule_docs_pages): read by ``ms_fmk_transplt rule <id>``, the HTML report and the
workbook's links. Reading them needs no engine module (no LibCST)."""

from __future__ import annotations

from functools import cache, lru_cache
from pathlib import Path

from ms_fmk_transplt.catalogue.rule_catalog import rule_matches


def pages_dir() -> Path:
    """docs/rules: inside the installed package, or in a source checkout."""
    package = Path(__file__).resolve().parent.parent  # (this module is in catalogue/)
    for candidate in (package / "rule_docs_pages", package.parent / "docs" / "rules"):
        if (candidate / "README.md").is_file():
            return candidate
    raise FileNotFoundError("docs/rules not found next to the ms_fmk_transplt package")


@lru_cache(maxsize=1)
def known_ids() -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in pages_dir().glob("*.md") if p.stem != "README"))


def page(rule_id: str) -> str | None:
    if rule_id not in known_ids():
        return None
    return (pages_dir() / f"{rule_id}.md").read_text(encoding="utf-8")


@cache
def summary(rule_id: str) -> str:
    """The one-line summary of a rule (the paragraph under its title), "" if unknown."""
    text = page(rule_id)
    return text.split("\n")[2] if text else ""


def suggestions(rule_id: str) -> list[str]:
    """Known ids close to a mistyped one: same family or prefix first, then by similarity."""
    import difflib  # (a mistyped id only)

    ids = known_ids()
    prefix = [i for i in ids if rule_id and (i.startswith(rule_id) or rule_id in i)]
    close = difflib.get_close_matches(rule_id, ids, n=5, cutoff=0.5)
    leaf = rule_id.rsplit(".", 1)[-1]
    by_leaf = difflib.get_close_matches(leaf, [i.rsplit(".", 1)[-1] for i in ids], n=3)
    close += [i for i in ids if i.rsplit(".", 1)[-1] in by_leaf]
    return list(dict.fromkeys([*prefix, *close]))[:6]


def ids_of(pattern: str) -> list[str]:
    """The known rule ids a --select / --ignore pattern (an id or an id prefix) names."""
    return [i for i in known_ids() if rule_matches(i, (pattern,))]


def pattern_problem(pattern: str) -> str | None:
    """What is wrong with a --select / --ignore pattern naming no rule (with the closest ids),
    None for one that names some."""
    if ids_of(pattern):
        return None
    close = suggestions(pattern)[:3]
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return f"{pattern}: not a rule id or id prefix{hint}"
