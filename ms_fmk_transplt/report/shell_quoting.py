"""How a name reaches a generated shell script (run_distributed_npu.sh, a kit's launchers,
compare.sh): every value taken from the input (a project folder, the -m file) goes through one
of these two, never into the text as it is.

``double_quoted``: the inside of a ``"..."`` word (an assignment), which bash reads back as the
exact name whatever it holds: ``\\ " $ ` `` are escaped, and a character that cannot stand in the
script as written (a newline, CR or other control character, a bidi control, a byte that is not
UTF-8) is spliced in as ``"$'\\xNN'"``, byte by byte, so each statement stays on one line and the
script stays valid UTF-8. ``commented``: the text of a comment line, as names are shown to people
(safe_names.shown): never a raw newline or CR, which would end the comment and make the rest of
the name a command. ``filled`` puts the values into a template in one pass (a value is never
searched for another placeholder: a file named ``__MAIN__.py`` stays a name)."""

from __future__ import annotations

import itertools
import re

from ms_fmk_transplt.safe_names import shown

_ESCAPED = ("\\", '"', "$", "`")  # the characters a double-quoted bash word interprets
_PLACEHOLDER = re.compile(r"__[A-Z][A-Z_]*[A-Z]__")


def filled(template: str, values: dict[str, str]) -> str:
    """``template`` with each ``__KEY__`` of ``values`` replaced by its value, in one pass."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group()[2:-2], m.group()), template)


def double_quoted(text: str) -> str:
    """``text`` (a name; undecodable bytes as os.fsdecode's surrogates) escaped for the inside of
    a double-quoted bash word: bash reads back exactly its bytes."""
    out = []
    for spliced, chars in itertools.groupby(text, key=_spliced):
        run = "".join(chars)
        if spliced:
            out.append("\"$'" + "".join(f"\\x{b:02x}" for b in _bytes(run)) + "'\"")
        else:
            for char in _ESCAPED:
                run = run.replace(char, "\\" + char)
            out.append(run)
    return "".join(out)


def name_values(names: dict[str, str]) -> dict[str, str]:
    """The template values of names from the input: ``__KEY__`` for a comment line, and
    ``__KEY_QUOTED__`` for the inside of a ``"..."`` word, of each."""
    values = {}
    for key, name in names.items():
        values[key], values[f"{key}_QUOTED"] = commented(name), double_quoted(name)
    return values


def commented(text: str) -> str:
    """``text`` for a comment line of a script: on one line, control characters escaped."""
    return shown(text)


def _spliced(char: str) -> bool:
    return not char.isprintable()  # the ASCII space is printable, other separators are not


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")
