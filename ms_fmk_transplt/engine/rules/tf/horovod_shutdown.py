"""The other half of tf.horovod's ``hvd.init()`` -> ``(npu_sess, npu_shutdown) =
init_resource()``: ``shutdown_resource(npu_sess, npu_shutdown)`` and ``close_session(npu_sess)``
once training ends, in the program's entry only (rule tf.horovod_shutdown, declared here).

The adapter's documentation (initialize_system) runs shutdown_system and closes the session
``init_resource`` opened after training; Huawei's convert_tf2npu (``-d horovod``) puts the pair at
the end of the entry's ``__main__`` block. Here the pair goes at the end of the block that holds
the rewritten ``hvd.init()`` statement, when that block is where the program ends: the
``__main__`` guard's body, the module of a program entry (the program model's), or a
module-level function the guard (or an entry's module-level call) runs, directly or through
``tf.app.run`` / ``absl.app.run``. Anywhere else (a library module, a nested block, a function
with an early return, a block that ends by exiting) nothing is inserted: tf.horovod's caveat
says what to add by hand."""

from __future__ import annotations

import ast

from ms_fmk_transplt.catalogue.rule_catalog import declare
from ms_fmk_transplt.engine.options import kept_rule
from ms_fmk_transplt.engine.rules.tf.tf_files import TfFile
from ms_fmk_transplt.engine.spans.span_context import SpanContext

HOROVOD_SHUTDOWN = declare(
    "tf.horovod_shutdown",
    "`shutdown_resource(npu_sess, npu_shutdown)` and `close_session(npu_sess)` where the entry's "
    "training ends, after tf.horovod's `init_resource()`",
    "tf.horovod turns `hvd.init()` into `(npu_sess, npu_shutdown) = init_resource()`: the "
    "adapter (tf_adapter/python/npu_bridge/npu_init.py) runs initialize_system in a session of "
    "its own, and its documentation runs shutdown_system and closes that session once training "
    "ends. Huawei's convert_tf2npu (convert_tf2npu/ast_impl.py, `-d horovod`) adds the pair at "
    "the end of the entry's `__main__` block. Here it goes once per program, at the end of the "
    "block that holds the `init_resource()` statement, when that block is where the program "
    "ends: the `__main__` guard's body, the module of a program entry (the program model's), "
    "or a module-level function the guard or the entry's module-level code runs (`main()`, "
    "`tf.app.run(main)`, `tf.compat.v1.app.run()`, `absl.app.run(main)`), before a final "
    "`return` of a name or constant. A library module (no entry), a nested block (`if "
    "FLAGS.horovod: hvd.init()`), a function with an early `return` and a block that ends by "
    "exiting (`tf.app.run()` after `hvd.init()`, `sys.exit`) get nothing: tf.horovod's caveat "
    "says what to add. Nothing either when tf.horovod is deselected or the `hvd.init()` line "
    "carries a `# msft:` comment (the pair would name a session nobody opened).",
)
_RUNNERS = frozenset({"tensorflow.app.run", "tensorflow.compat.v1.app.run", "absl.app.run"})
_EXITS = _RUNNERS | {"sys.exit", "os._exit", "exit", "quit"}
_SHUTDOWN = ("shutdown_resource(npu_sess, npu_shutdown)", "close_session(npu_sess)")


def pair_shutdown(ctx: SpanContext, tf: TfFile, stmt: ast.Expr, rule: str) -> None:
    """After ``stmt`` (``hvd.init()``) became ``init_resource()``: the pair at the end of its
    block when that block is where the program ends (see the module's docstring)."""
    if tf.shutdown_paired or ctx.unit is None or ctx.unit.node is not stmt:
        return
    options = ctx.options
    if options is not None and not (
        kept_rule(rule, options) and kept_rule(HOROVOD_SHUTDOWN, options)
    ):
        return
    source = ctx.source
    first, last = source.offset(stmt.lineno, 0), source.line_end(stmt.end_lineno or stmt.lineno)
    if b"msft:" in source.data[first:last]:
        return
    ancestors = ctx.unit.ancestors
    block: list[ast.stmt] | None = None
    if not ancestors:
        block = _module_block(tf)
    elif len(ancestors) == 1 and _is_guard(ancestors[0]):
        block = ancestors[0].body  # type: ignore[attr-defined]
    elif len(ancestors) == 1 and isinstance(ancestors[0], ast.FunctionDef):
        function = ancestors[0]
        if function.name in _run_functions(ctx, tf) and not _early_return(function):
            block = function.body
    if block is None or _ends_by_exit(ctx, block):
        return
    tf.shutdown_paired = _insert(ctx, block)


def _module_block(tf: TfFile) -> list[ast.stmt] | None:
    """The module's end, as a one-statement block: only in a program's entry."""
    tail = tf.module_tail
    if not tf.program_entry or tail is None:
        return None
    if _is_guard(tail):
        return None  # (the guard's body runs last: a module-level init pairs only without one)
    return [tail]


def _is_guard(node: ast.AST) -> bool:
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    sides = [node.test.left, *node.test.comparators]
    return any(isinstance(x, ast.Name) and x.id == "__name__" for x in sides) and any(
        isinstance(x, ast.Constant) and x.value == "__main__" for x in sides
    )


def _run_functions(ctx: SpanContext, tf: TfFile) -> set[str]:
    """The names of the functions the program's end runs: those the ``__main__`` guard calls
    (and, in a program entry, the module's own statements), directly or through an app
    runner (``tf.app.run()`` runs ``main``)."""
    calls = tf.guard_calls + (tf.module_calls if tf.program_entry else [])
    names: set[str] = set()
    for call in calls:
        if isinstance(call.func, ast.Name) and ctx.qname(call.func) in (None, call.func.id):
            names.add(call.func.id)
        elif ctx.qname(call.func) in _RUNNERS:
            given = [k.value for k in call.keywords if k.arg == "main"] + call.args[:1]
            if not given:
                names.add("main")
            elif isinstance(given[0], ast.Name):
                names.add(given[0].id)
    return names


def _early_return(function: ast.FunctionDef) -> bool:
    """A ``return`` other than the body's last statement (nested definitions aside)."""
    todo: list[ast.AST] = list(function.body[:-1])
    last = function.body[-1]
    if not isinstance(last, ast.Return):
        todo.append(last)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return False


def _ends_by_exit(ctx: SpanContext, block: list[ast.stmt]) -> bool:
    last = block[-1]
    if isinstance(last, ast.Return):
        return last.value is not None and not isinstance(last.value, (ast.Name, ast.Constant))
    if isinstance(last, ast.Raise):
        return True
    return (
        isinstance(last, ast.Expr)
        and isinstance(last.value, ast.Call)
        and (ctx.qname(last.value.func) or "") in _EXITS
    )


def _insert(ctx: SpanContext, block: list[ast.stmt]) -> bool:
    """The pair as the block's last lines (before a final ``return``); False when the block
    does not start a line of its own (``def main(): hvd.init(); train()``)."""
    source = ctx.source
    first, last = block[0], block[-1]
    indent = first.col_offset
    line_start = source.offset(first.lineno, 0)
    if source.data[line_start : line_start + indent].strip(b" \t"):
        return False
    pad, newline = source.data[line_start : line_start + indent].decode(), source.newline
    text = "".join(f"{pad}{code}{newline}" for code in _SHUTDOWN)
    if isinstance(last, ast.Return):
        if last.col_offset != indent or (len(block) > 1 and block[-2].end_lineno == last.lineno):
            return False
        anchor, at = last.lineno, source.offset(last.lineno, 0)
    else:
        end_line = last.end_lineno or last.lineno
        anchor, at = end_line + 1, source.line_end(end_line)
        if at == len(source.data) and not source.data.endswith((b"\n", b"\r")):
            text = newline + text
    ctx.replace(at, at, text)
    message = "shutdown_resource(npu_sess, npu_shutdown), close_session(npu_sess) inserted"
    ctx.record_insert(anchor, HOROVOD_SHUTDOWN, message, "\n".join(_SHUTDOWN))
    return True
