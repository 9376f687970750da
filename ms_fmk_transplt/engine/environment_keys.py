"""Where a string is an environment key, and how its rewrite is described: shared by the LibCST
concern (engine/environment.py, the rule environment.ascend_variable) and the span pass
(engine/spans/environment_spans.py), without importing LibCST."""

from __future__ import annotations

RULE = "environment.ascend_variable"
KEY_CALLS = frozenset(
    {
        "os.getenv",
        "os.putenv",
        "os.unsetenv",
        "os.environ.get",
        "os.environ.setdefault",
        "os.environ.pop",
    }
)
ENVIRON = "os.environ"


def message(cuda: str, ascend: str, caveat: str) -> str:
    text = f"environment variable '{cuda}' -> '{ascend}'"
    return f"{text} ({caveat})" if caveat else text
