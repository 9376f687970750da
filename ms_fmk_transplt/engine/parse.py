"""Parsing one file (rules parse.syntax_error, parse.decode_error).

A file LibCST cannot parse is not migrated: it is copied unchanged and reported with its line and
the reason, in CPython's words when CPython agrees the file is invalid (e.g. Python 2 ``print``).
"""

from __future__ import annotations

import ast
import io
import tokenize

import libcst as cst

from ms_fmk_transplt.engine.skipped_file import skipped
from ms_fmk_transplt.events import FileResult
from ms_fmk_transplt.tables import Tables


def parse(source: bytes, path: str, tables: Tables) -> cst.Module | FileResult:
    """The module, or the SKIPPED result to return for a file that cannot be parsed."""
    rules = tables.parse
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        line, reason = _syntax_error(source, exc)
        rule, message = rules.syntax_rule, f"cannot parse: {reason}; copied unchanged"
    except (UnicodeDecodeError, LookupError, SyntaxError) as exc:
        line, reason = _decode_error(source, exc)
        rule, message = rules.decode_rule, f"cannot decode: {reason}; copied unchanged"
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
