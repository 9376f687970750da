"""Write docs/rules/<id>.md for every declared rule id (and docs/rules/README.md, the index) from
the declarations in the code and the golden fixture pairs. Run after changing a rule:

    python scripts/build_rule_docs.py

tests/test_rule_catalog.py fails while a page is stale, missing or left over.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ms_fmk_transplt.commands.rule_docs import all_rules, index_page, render_page  # noqa: E402


def main() -> None:
    folder = ROOT / "docs" / "rules"
    folder.mkdir(parents=True, exist_ok=True)
    rules = all_rules()
    wanted = {f"{rule_id}.md": render_page(rule, ROOT) for rule_id, rule in rules.items()}
    wanted["README.md"] = index_page(rules)
    for stale in folder.glob("*.md"):
        if stale.name not in wanted:
            stale.unlink()
    for name, text in wanted.items():
        (folder / name).write_bytes(text.encode("utf-8"))
    print(f"{len(rules)} rule pages in {folder.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
