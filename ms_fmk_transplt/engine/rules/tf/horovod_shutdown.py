"""The other half of tf.horovod's ``hvd.init()`` -> ``(npu_sess, npu_shutdown) =
init_resource()``: ``shutdown_resource(npu_sess, npu_shutdown)`` and ``close_session(npu_sess)``
once training ends, in the program's entry only (rule tf.horovod_shutdown, declared here).

The adapter's documentation (initialize_system) runs shutdown_system and closes the session
``init_resource`` opened after training; Huawei's convert_tf2npu (``-d horovod``) puts the pair at
the end of the entry's ``__main__`` block. Here the pair goes at the end of the block that holds
the rewritten ``hvd.init()`` statement, when that block is where the program ends: the
``__main__`` guard's body, the module of a program entry (the program model's), or a
module-level function the guard (or an entry's module-level call) runs, directly or through
``tf.app.run`` / ``absl.app.run``. In the function the program ends with (the one its last
statement runs), an ``hvd.init()`` directly in the body of a top-level ``if <test>:`` (an
``else`` may follow: the same test decides both; the test one line of names, attributes,
constants, comparisons and boolean operators, none of its names bound again in the function)
gets the pair at the function's end under ``if <test>:`` (BERT's
``if FLAGS.horovod: hvd.init()``). Anywhere else (a library module, another nested block, a
function with an early return, a block that ends by exiting) nothing is inserted: tf.horovod's
row says where the pair goes by hand (a helper's or a method's locals must reach the program's
end first)."""

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
    "ends: the `__main__` guard's body, the module of a program entry (the program model's), or"
    " a module-level function the guard or the entry's module-level code runs (`main()`, "
    "`tf.app.run(main)`, `tf.compat.v1.app.run()`, `absl.app.run(main)`), before a final "
    "`return` of a name or constant. In the function the program ends with, an `hvd.init()` "
    "directly in the body of a top-level `if <test>:` (an `else` may follow: the same test "
    "decides both; the test one line of names, attributes, constants, comparisons, "
    "`and`/`or`/`not`, no call; none of its names bound again in the function) gets the pair at"
    " the function's end under the same `if <test>:` (BERT's `if FLAGS.horovod: hvd.init()` in "
    "`main`). A library module (no entry), another nested block (a test that calls, a test name"
    " reassigned, an init under `else`), a function the program does not end with, a method, a "
    "function with an early `return` and a block that ends by exiting (`tf.app.run()` after "
    "`hvd.init()`, `sys.exit`) get nothing: tf.horovod's row then says where the pair goes (a "
    "helper's or a method's `npu_sess`/`npu_shutdown` are its locals: returned, or kept on "
    "`self`, first). Nothing either when tf.horovod is deselected or the `hvd.init()` line "
    "carries a `# msft:` comment (the pair would name a session nobody opened).",
)
_RUNNERS = frozenset({"tensorflow.app.run", "tensorflow.compat.v1.app.run", "absl.app.run"})
_EXITS = _RUNNERS | {"sys.exit", "os._exit", "exit", "quit"}
_SHUTDOWN = ("shutdown_resource(npu_sess, npu_shutdown)", "close_session(npu_sess)")


def pair_shutdown(ctx: SpanContext, tf: TfFile, stmt: ast.Expr, rule: str) -> str:
    """After ``stmt`` (``hvd.init()``) became ``init_resource()``: the pair at the end of its
    block when that block is where the program ends (see the module's docstring). Returns, when
    nothing is inserted, where the pair must go (for tf.horovod's row), else ``""``."""
    if tf.shutdown_paired or ctx.unit is None or ctx.unit.node is not stmt:
        return ""
    options = ctx.options
    if options is not None and not (
        kept_rule(rule, options) and kept_rule(HOROVOD_SHUTDOWN, options)
    ):
        return ""
    source = ctx.source
    first, last = source.offset(stmt.lineno, 0), source.line_end(stmt.end_lineno or stmt.lineno)
    if b"msft:" in source.data[first:last]:
        return ""
    if _insert_pair(ctx, tf, stmt):
        tf.shutdown_paired = True
        return ""
    return _where(ctx, tf)


def _where(ctx: SpanContext, tf: TfFile) -> str:
    """Where the pair goes by hand, by the shape that got none."""
    assert ctx.unit is not None
    ancestors = ctx.unit.ancestors
    pair = "shutdown_resource(npu_sess, npu_shutdown) and close_session(npu_sess)"
    functions = [x for x in ancestors if isinstance(x, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if ancestors and isinstance(ancestors[0], ast.ClassDef) and functions:
        method = f"{ancestors[0].name}.{functions[0].name}"
        return (
            f"no shutdown inserted: init_resource() runs in `{method}()`; keep npu_sess and "
            "npu_shutdown on the object (`(self.npu_sess, self.npu_shutdown) = "
            "init_resource()`) and run shutdown_resource(self.npu_sess, self.npu_shutdown) and "
            "close_session(self.npu_sess) after the object's last training/evaluation call"
        )
    if functions and functions[0].name != _last_run_function(ctx, tf):
        return (
            f"no shutdown inserted: init_resource() runs in `{functions[0].name}()`, not in the "
            "function the program's entry ends with; npu_sess and npu_shutdown are its locals: "
            f"return them (or make them global) and run {pair} in the entry's main once "
            "training and evaluation are done"
        )
    if functions:
        return (
            f"no shutdown inserted: run {pair} at the end of `{functions[0].name}()`, after "
            "training and evaluation, on each path that ran init_resource() (under the test "
            "that ran it, before any return or exit)"
        )
    return (
        f"no shutdown inserted: run {pair} where the program's training and evaluation end "
        "(the end of the entry's main)"
    )


def _insert_pair(ctx: SpanContext, tf: TfFile, stmt: ast.Expr) -> bool:
    assert ctx.unit is not None
    ancestors = ctx.unit.ancestors
    block: list[ast.stmt] | None = None
    test: ast.If | None = None
    if not ancestors:
        block = _module_block(tf)
    elif len(ancestors) == 1 and _is_guard(ancestors[0]):
        block = ancestors[0].body  # type: ignore[attr-defined]
    elif len(ancestors) <= 2 and isinstance(ancestors[0], ast.FunctionDef):
        function = ancestors[0]
        if function.name in _run_functions(ctx, tf) and not _early_return(function):
            block = function.body
            if len(ancestors) == 2:  # (nested: only in the function the program ends with)
                last = function.name == _last_run_function(ctx, tf)
                test = _plain_if(function, ancestors[1], stmt) if last else None
                block = block if test is not None else None
    if block is None or _ends_by_exit(ctx, block):
        return False
    return _insert(ctx, block, test)


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
    return _called(ctx, tf.guard_calls + (tf.module_calls if tf.program_entry else []))


def _last_run_function(ctx: SpanContext, tf: TfFile) -> str | None:
    """The function the program ends with: the one the module's last statement (or the last
    statement of a final ``__main__`` guard) calls, directly or through an app runner."""
    last = tf.module_tail
    if last is not None and _is_guard(last):
        last = last.body[-1]  # type: ignore[attr-defined]
    elif not tf.program_entry:
        return None
    if not isinstance(last, ast.Expr) or not isinstance(last.value, ast.Call):
        return None
    names = _called(ctx, [last.value])
    return names.pop() if len(names) == 1 else None


def _called(ctx: SpanContext, calls: list[ast.Call]) -> set[str]:
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


def _plain_if(function: ast.FunctionDef, node: ast.AST, stmt: ast.stmt) -> ast.If | None:
    """``node`` when it is ``if <test>:`` at the top of ``function``'s body, holding ``stmt``
    directly in its body (an ``else``/``elif`` may follow: the test decides them too, and the
    pair goes under the test only), its test one line of names, attributes, constants,
    comparisons and ``and``/``or``/``not`` (no call), and none of the test's names stored
    (assigned, deleted, bound) by the function anywhere after the test: the pair at the
    function's end goes under the same test, which then has the same value."""
    if not isinstance(node, ast.If) or node not in function.body:
        return None
    if stmt not in node.body or node.test.lineno != node.test.end_lineno:
        return None
    allowed = (ast.Name, ast.Attribute, ast.Constant, ast.Compare, ast.BoolOp, ast.UnaryOp)
    parts = list(ast.walk(node.test))
    if not all(
        isinstance(x, (*allowed, ast.expr_context, ast.cmpop, ast.boolop, ast.unaryop))
        for x in parts
    ):
        return None
    names = {x.id for x in parts if isinstance(x, ast.Name)}
    after = function.body[function.body.index(node) :]
    for top in after:
        for x in ast.walk(top):
            if isinstance(x, (ast.Global, ast.Nonlocal)) and names & set(x.names):
                return None
            bound = getattr(x, "name", None)  # (def/class names, `except ... as name`)
            if isinstance(x, (ast.stmt, ast.ExceptHandler)) and bound in names:
                return None
            if (
                isinstance(x, (ast.Name, ast.Attribute, ast.Subscript))
                and not isinstance(x.ctx, ast.Load)
                and _root_name(x) in names
            ):
                return None
            if isinstance(x, (ast.Import, ast.ImportFrom)) and names & {
                (a.asname or a.name).split(".")[0] for a in x.names
            }:
                return None
    return node


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


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


def _insert(ctx: SpanContext, block: list[ast.stmt], test: ast.If | None = None) -> bool:
    """The pair as the block's last lines (before a final ``return``), under ``if <the same
    test>:`` when ``test`` is given; False when the block (or the test's body) does not start
    a line of its own (``def main(): hvd.init(); train()``)."""
    source = ctx.source
    first, last = block[0], block[-1]
    pad = _pad(ctx, first)
    if pad is None:
        return False
    newline = source.newline
    lines = list(_SHUTDOWN)
    message = "shutdown_resource(npu_sess, npu_shutdown), close_session(npu_sess) inserted"
    if test is not None:
        inner = _pad(ctx, test.body[0])
        if inner is None or not inner.startswith(pad) or inner == pad:
            return False
        condition = ctx.code(test.test)
        lines = [f"if {condition}:", *(inner[len(pad) :] + code for code in _SHUTDOWN)]
        message += f" under `if {condition}:`, the test that ran init_resource()"
    text = "".join(f"{pad}{code}{newline}" for code in lines)
    if isinstance(last, ast.Return):
        shared = len(block) > 1 and block[-2].end_lineno == last.lineno
        if last.col_offset != first.col_offset or shared:
            return False
        anchor, at = last.lineno, source.offset(last.lineno, 0)
    else:
        end_line = last.end_lineno or last.lineno
        anchor, at = end_line + 1, source.line_end(end_line)
        if at == len(source.data) and not source.data.endswith((b"\n", b"\r")):
            text = newline + text
    ctx.replace(at, at, text)
    ctx.record_insert(anchor, HOROVOD_SHUTDOWN, message, "\n".join(lines))
    return True


def _pad(ctx: SpanContext, first: ast.stmt) -> str | None:
    """The indentation before ``first``, when it starts its line."""
    source = ctx.source
    line_start = source.offset(first.lineno, 0)
    pad = source.data[line_start : line_start + first.col_offset]
    return None if pad.strip(b" \t") else pad.decode()
