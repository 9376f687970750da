"""Files that cannot be read as Python (rules parse.syntax_error, parse.decode_error).

A file that cannot be decoded or parsed is not migrated: it is copied unchanged and reported with
its line and the reason, in CPython's words (e.g. Python 2 ``print``). The span pass reports what
the stdlib parser refuses (``refused_by_cpython``, ``undecodable``); ``parse`` reads a file for
the LibCST stages of the structural options (-r, -sim, distributed). LibCST is imported only
when one of them needs it.
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
import warnings
from typing import TYPE_CHECKING

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, SKIP_FILE, UNREAD_FILE, declare
from ms_fmk_transplt.engine.skipped_file import skipped
from ms_fmk_transplt.events import FileResult
from ms_fmk_transplt.tables import Tables

_SKIPPED = (
    " The file is copied to the output byte for byte and listed as a `skipped_file` row (open "
    "work: migrate it by hand, or fix it and run again)."
)
SYNTAX_ERROR = declare(
    "parse.syntax_error",
    "a file that does not parse as Python 3 (Python 2, NUL bytes, a template): copied unchanged",
    "The rules work on the syntax tree, so a file that is not valid Python 3 cannot be migrated. "
    "The row gives the line and CPython's own reason (e.g. `Missing parentheses in call to "
    "'print'`). A file in the syntax of a newer Python than the one running the tool (PEP 695 "
    "type parameters before 3.12, t-strings before 3.14: LibCST's grammar reads it) is not "
    "wrong: its row says so, and its tip is to run the tool under that newer Python." + _SKIPPED,
    kind=OPEN_WORK,
    opt_out=SKIP_FILE,
    fixed=UNREAD_FILE,
)
DECODE_ERROR = declare(
    "parse.decode_error",
    "a file that cannot be decoded (bad PEP 263 cookie, not UTF-8): copied unchanged",
    "Python source is UTF-8 unless a coding cookie says otherwise; a file whose bytes do not "
    "decode (or whose cookie names an unknown encoding) cannot be read as code. The row gives the "
    "line of the first undecodable byte or the bad cookie." + _SKIPPED,
    kind=OPEN_WORK,
    opt_out=SKIP_FILE,
    fixed=UNREAD_FILE,
)
if TYPE_CHECKING:
    import libcst as cst

_LIBCST_READS_UP_TO = 5 * 2**20
# CPython's reasons for code that LibCST reads but that is no newer Python's: a bad escape, and
# Python 2's ``except E, name:`` (which Python 3.14 reads, as catching E or name: a change of
# meaning, not a remedy)
_NOT_NEWER = ("(unicode error)", "multiple exception types must be parenthesized")


def undecodable(source: bytes, exc: Exception) -> tuple[int, str, str]:
    """(line, rule, message) of the row for a file whose bytes do not decode."""
    line, reason = _decode_error(source, exc)
    return line, DECODE_ERROR, f"cannot decode: {reason}; copied unchanged"


def refused_by_cpython(source: bytes, exc: Exception) -> tuple[int, str, str, bool]:
    """(line, rule, message, newer) of the row for a file the stdlib parser (or compiler:
    ``nonlocal`` at module level) refuses: CPython's reason for the whole file. Syntax of a newer
    Python (PEP 695 or nested f-strings on Python 3.11, t-strings before 3.14: LibCST's grammar
    reads it) says so, with the remedy (``newer``: the row's tip is that remedy too)."""
    line = getattr(exc, "lineno", None) or 1
    reason = getattr(exc, "msg", None) or str(exc)
    parsed = False
    try:
        with warnings.catch_warnings():  # e.g. invalid escapes: the user's code
            warnings.simplefilter("ignore")
            compile(source, "<file>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
            parsed = True
            compile(source, "<file>", "exec", dont_inherit=True)  # what only compiling finds
    except SyntaxError as py_exc:
        line, reason = py_exc.lineno or line, py_exc.msg
    except ValueError as py_exc:  # NUL bytes, before Python 3.11.4
        line, reason = 1, str(py_exc)
    older = any(words in reason for words in _NOT_NEWER)
    newer = not parsed and not older and _libcst_reads(source)
    if newer:
        here = f"{sys.version_info[0]}.{sys.version_info[1]}"
        message = (
            f"cannot parse: needs a newer Python than {here} to be parsed (Python {here}: "
            f"{reason}): run the tool with a newer Python; copied unchanged"
        )
    else:
        message = f"cannot parse: invalid Python 3 syntax ({reason}); copied unchanged"
    return line, SYNTAX_ERROR, message, newer


def _libcst_reads(source: bytes) -> bool:
    """Whether LibCST's grammar (newer than this Python's) reads the file; not tried beyond 5 MiB
    (the LibCST stages' default size limit)."""
    import libcst as cst

    if len(source) > _LIBCST_READS_UP_TO:
        return False
    try:
        cst.parse_module(source)
    except Exception:  # any failure: not the syntax of a newer Python
        return False
    return True


def parse(source: bytes, path: str, tables: Tables) -> cst.Module | FileResult:
    """The module, or the SKIPPED result to return for a file that cannot be parsed."""
    import libcst as cst

    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        line, reason = _syntax_error(source, exc)
        rule, message = SYNTAX_ERROR, f"cannot parse: {reason}; copied unchanged"
    except (UnicodeDecodeError, LookupError, SyntaxError) as exc:
        line, reason = _decode_error(source, exc)
        rule, message = DECODE_ERROR, f"cannot decode: {reason}; copied unchanged"
    return skipped(path, source, line, rule, message, tables)


def _decode_error(source: bytes, exc: Exception) -> tuple[int, str]:
    """Where and why a file cannot be decoded, in terms the user can act on."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError as cookie_exc:  # a bad coding cookie, a BOM contradicting it, or simply
        if "invalid or missing encoding" not in str(cookie_exc.msg):  # undecodable first lines
            return cookie_exc.lineno or 1, str(cookie_exc.msg)
        encoding = "utf-8"
    except LookupError as cookie_exc:
        return 1, str(cookie_exc)
    try:
        source.decode(encoding)
    except UnicodeDecodeError as bad:
        line = source.count(b"\n", 0, bad.start) + 1
        byte = source[bad.start : bad.start + 1].hex()
        if encoding == "utf-8":
            fix = "no coding cookie: add e.g. '# -*- coding: latin-1 -*-' as the first line"
        else:
            fix = f"{encoding} from the coding cookie: correct the cookie"
        return line, f"line {line}: byte 0x{byte} is not valid {encoding} ({fix}, or save as UTF-8)"
    return 1, str(exc)


def _syntax_error(source: bytes, exc: cst.ParserSyntaxError) -> tuple[int, str]:
    try:
        compile(source, "<file>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as py_exc:
        return py_exc.lineno or exc.raw_line, f"invalid Python 3 syntax ({py_exc.msg})"
    except (ValueError, UnicodeDecodeError):
        pass
    first = exc.message.splitlines()[0] if exc.message else "syntax error"
    return exc.raw_line, f"LibCST cannot parse it ({first})"
