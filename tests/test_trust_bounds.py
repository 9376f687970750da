"""Issue 27, bounds: every file ends in bounded time and memory, and one bad file never kills
or hangs the run (a too-deep or too-slow file is skipped with a row and a reason; a worker
that dies costs its file only; workers do not outlive a killed run)."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import tables_for

import ms_fmk_transplt
from ms_fmk_transplt.commands.cli import main
from ms_fmk_transplt.engine import migrate_source
from ms_fmk_transplt.engine.options import EngineOptions

# the code under test, also in subprocesses (PYTHONPATH may name another checkout)
ROOT = Path(ms_fmk_transplt.__file__).resolve().parent.parent
CUDA = b"import torch\nx = torch.ones(1).cuda()\n"


def long_sum(terms: int) -> bytes:
    return b"import torch\nx = torch.ones(1).cuda()" + b" + 1" * terms + b"\n"


def tool(
    *args: str, timeout: float = 120, driver: str | None = None
) -> subprocess.CompletedProcess:
    """The real command in a subprocess (a crash or a hang must not take pytest with it)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    head = ["-c", driver, "-q"] if driver else ["-m", "ms_fmk_transplt", "-q"]
    return subprocess.run(
        [sys.executable, *head, *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def rows(out: Path) -> list[str]:
    return (out / "unsupported_op.csv").read_text(encoding="utf-8").splitlines()[1:]


@pytest.mark.parametrize("terms", [1000, 12000])
@pytest.mark.parametrize("extra", [(), ("-s",)])
def test_a_long_expression_is_skipped_with_a_reason(tmp_path: Path, terms, extra) -> None:
    """1,000 terms: RecursionError, "internal error", exit 1; 12,000: SIGSEGV after 99 s
    (LibCST's native parser), no log, the partial folder left behind."""
    src = tmp_path / "p"
    src.mkdir()
    (src / "m.py").write_bytes(long_sum(terms))
    (src / "ok.py").write_bytes(CUDA)
    start = time.monotonic()
    done = tool("-i", str(src), "-o", str(tmp_path / "o"), "--no-cache", *extra, timeout=60)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - start < 30
    out = tmp_path / "o" / "p_msft"
    assert (out / "m.py").read_bytes() == long_sum(terms)  # copied unchanged
    assert b".npu()" in (out / "ok.py").read_bytes()  # the run went on
    (row,) = [r for r in rows(out) if r.startswith("m.py,")]
    assert "skipped_file" in row and row.endswith(",parse.limit")
    log = (out / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert "[parse.limit] " in log and "code nested more than 300 levels deep" in log
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["p_msft"]


@pytest.mark.parametrize("options", [None, EngineOptions(specify_device=True)])
def test_a_long_legal_expression_below_the_bound_is_migrated(options) -> None:
    """250 terms: the earlier LibCST implementation of -s ran out of recursion at about 150."""
    result = migrate_source(long_sum(250), "m.py", tables_for(), options)
    assert result.status.name == "CHANGED", [n.message for n in result.notices]
    assert b"torch.ones(1).npu() + 1 + 1" in result.output


@pytest.mark.parametrize(
    "code",
    [
        "y = " + "- " * 400 + "torch.cuda.x",
        "y = torch.cuda" + ".a()" * 200,
        "y = " + "lambda: " * 400 + "torch.cuda.x",
        "y = " + "1 if torch.cuda.c else " * 400 + "2",
        "y = torch.cuda.a" + "[0]" * 400,
        "if a:\n    pass\n" + "".join(f"elif torch.cuda.x{i}:\n    pass\n" for i in range(400)),
        'y = "cuda"' + ' + "a"' * 400,
    ],
    ids=["unary", "calls", "lambda", "ifexp", "subscript", "elif", "strings"],
)
def test_deep_code_of_every_kind_is_skipped_not_failed(code: str) -> None:
    source = ("import torch\n" + code + "\n").encode()
    for options in (None, EngineOptions(specify_device=True)):
        result = migrate_source(source, "m.py", tables_for(), options)
        assert result.status.name == "SKIPPED" and result.output == source
        assert [n.rule for n in result.notices] == ["parse.limit"]


def test_deep_user_rule_expression_is_refused(tmp_path: Path) -> None:
    """``arg_new`` is parsed by LibCST: a deep one crashed it (400 terms: under the 1,000
    characters a rule value may have, over the 300 levels of tree the engine accepts)."""
    deep = {"func_name": "f", "arg_idx": 0, "arg_new": "1" + "+1" * 400}
    rule = {"rules": {"ArgsModifyRule": [deep]}}
    (tmp_path / "rules.json").write_text(json.dumps(rule))
    src = tmp_path / "p"
    src.mkdir()
    (src / "a.py").write_bytes(CUDA)
    done = tool("-i", str(src), "-o", str(tmp_path / "o"), "-r", str(tmp_path / "rules.json"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().endswith("expression nested more than 300 levels deep")
    assert done.stderr.count("\n") == 1 and not (tmp_path / "o").exists()


def test_a_file_that_takes_too_long_is_skipped_and_not_cached(tmp_path: Path, monkeypatch) -> None:
    from ms_fmk_transplt.run import file_migration

    real = file_migration.migrate_source

    def slow_on_one_file(source: bytes, path: str, *args, **kwargs):
        while path == "slow.py":
            pass  # Python code never finishing
        return real(source, path, *args, **kwargs)

    monkeypatch.setattr(file_migration, "migrate_source", slow_on_one_file)
    src = tmp_path / "p"
    src.mkdir()
    (src / "slow.py").write_bytes(CUDA)
    (src / "ok.py").write_bytes(CUDA)
    args = ["-q", "-i", str(src), "-o", str(tmp_path / "o"), "-j", "1", "--file-timeout", "0.5"]
    args += ["--cache-dir", str(tmp_path / "cache")]
    start = time.monotonic()
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert time.monotonic() - start < 20
    out = tmp_path / "o" / "p_msft"
    assert (out / "slow.py").read_bytes() == CUDA and b".npu()" in (out / "ok.py").read_bytes()
    (row,) = [r for r in rows(out) if r.startswith("slow.py,")]
    assert "skipped_file" in row and row.endswith(",parse.limit")
    log = (out / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert "still being migrated after 0.5 s (--file-timeout); copied unchanged" in log
    monkeypatch.undo()  # a run with time to spare migrates it: the skip was not cached
    result = CliRunner().invoke(main, [*args[:-2], "--overwrite", *args[-2:]])
    assert result.exit_code == 0 and b".npu()" in (out / "slow.py").read_bytes()


CRASHING = textwrap.dedent(
    """
    import os, signal, sys
    from ms_fmk_transplt.run import tree_migration
    from ms_fmk_transplt.commands.launch import entry

    real = tree_migration.migrate_file

    def crash_on_boom(path, rel, *args, **kwargs):
        if rel == "boom.py":
            os.kill(os.getpid(), signal.SIGSEGV)  # as LibCST's native parser did
        return real(path, rel, *args, **kwargs)

    tree_migration.migrate_file = crash_on_boom
    sys.argv[0] = "ms_fmk_transplt"
    entry()
    """
)


@pytest.mark.parametrize("before", [0, 1, 3], ids=["first", "second", "last"])
def test_a_worker_that_dies_costs_its_file_only(tmp_path: Path, before: int) -> None:
    """multiprocessing.Pool waited forever for the result of a worker that died. ``before``:
    the files of its chunk (4 tasks) the worker wrote before it died: they are migrated again,
    alone, over what it wrote."""
    src = tmp_path / "p"
    src.mkdir()
    for i in range(30):
        (src / f"m{i:02}.py").write_bytes(CUDA)
    for i in range(before):  # (sorted before boom.py)
        (src / f"a{i}.py").write_bytes(CUDA)
    (src / "boom.py").write_bytes(CUDA)
    done = tool("-i", str(src), "-o", str(tmp_path / "o"), "-j", "2", "--no-cache",
                driver=CRASHING, timeout=90)  # fmt: skip
    assert done.returncode == 1, done.stderr
    out = tmp_path / "o" / "p_msft"
    assert (out / "boom.py").read_bytes() == CUDA
    assert all(b".npu()" in (out / f"m{i:02}.py").read_bytes() for i in range(30))
    assert all(b".npu()" in (out / f"a{i}.py").read_bytes() for i in range(before))
    (row,) = [r for r in rows(out) if r.startswith("boom.py,")]
    assert "failed_file" in row and row.endswith(",engine.internal_error")
    log = (out / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert "the worker process migrating this file died" in log
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["p_msft"]


def _double(state: object, task: int) -> int:
    return 2 * task


def _crashed(task: int) -> int:
    return -1


def test_a_pool_broken_between_two_submits_redoes_what_was_lost() -> None:
    """A worker dying while the parent submits the next chunk: the executor refuses the submit
    (BrokenProcessPool out of submit, not out of a result), which escaped as an internal error
    (seen once in a full suite). Every task still gets its result, in order."""
    import multiprocessing
    from concurrent.futures.process import BrokenProcessPool

    from ms_fmk_transplt.run.worker_pool import WorkerPool

    pool = WorkerPool(multiprocessing.get_context("fork"), 2, _double, _crashed, None)
    made = pool._new
    pools: list[object] = []

    def new(workers: int):  # the first pool refuses its second submit
        executor = made(workers)
        if not pools:
            submit, count = executor.submit, [0]

            def refusing(*args, **kwargs):
                count[0] += 1
                if count[0] > 1:
                    raise BrokenProcessPool("a child process terminated abruptly")
                return submit(*args, **kwargs)

            executor.submit = refusing
        pools.append(executor)
        return executor

    pool._new = new
    try:
        assert list(pool.results(range(20))) == [2 * i for i in range(20)]
    finally:
        pool.close()
    assert len(pools) > 1


SLOW = textwrap.dedent(
    """
    import sys, time
    from ms_fmk_transplt.run import tree_migration
    from ms_fmk_transplt.commands.launch import entry

    real = tree_migration.migrate_file

    def slow(*args, **kwargs):
        time.sleep(120)  # as LibCST's native parser on a deep file: not at a Python line
        return real(*args, **kwargs)

    tree_migration.migrate_file = slow
    sys.argv[0] = "ms_fmk_transplt"
    entry()
    """
)


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(p) for p in (task / "children").read_text().split()]
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc")
def test_workers_end_when_the_run_is_killed(tmp_path: Path) -> None:
    """SIGKILL cannot be caught: the workers ran on for minutes (until the file in hand was
    done)."""
    src = tmp_path / "p"
    src.mkdir()
    for i in range(20):
        (src / f"m{i:03}.py").write_bytes(CUDA)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    args = ["-q", "-i", str(src), "-o", str(tmp_path / "o"), "-j", "2", "--no-cache"]
    proc = subprocess.Popen([sys.executable, "-c", SLOW, *args], env=env)
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while time.monotonic() < deadline and len(workers) < 2:
        time.sleep(0.1)
        workers = [p for p in _children(proc.pid) if _alive(p)]
    assert len(workers) >= 2
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(p) for p in workers):
        time.sleep(0.1)
    still = [p for p in workers if _alive(p)]
    for pid in still:  # (do not leave them running when the test fails)
        os.kill(pid, signal.SIGKILL)
    assert not still


def _exact_depth(tree: ast.AST) -> int:
    level, depth = [tree], 0
    while level:
        depth += 1
        level = [c for n in level for c in ast.iter_child_nodes(n)]
    return depth


@pytest.mark.parametrize("extra", [0, 1, 2, 3, 4, 5, 6])
def test_the_depth_guard_is_exact_at_the_bound(extra: int) -> None:
    """The measure skips short expressions, and must still find every deep one."""
    from ms_fmk_transplt.safety.tree_depth import MAX_DEPTH, TooDeep, check_tree

    for make in (
        lambda n: "x = " + "- " * n + "y",
        lambda n: "x = y" + " + 1" * n,
        lambda n: "x = f'{" + "- " * n + "y}'",
        lambda n: "def f():\n    x = (y" + "\n     + 1" * n + ")\n",
    ):
        for n in range(MAX_DEPTH - 10 + extra * 2, MAX_DEPTH - 8 + extra * 2):
            source = make(n).encode()
            tree = ast.parse(source)
            try:
                check_tree(tree, source)
                flagged = False
            except TooDeep:
                flagged = True
            assert flagged == (_exact_depth(tree) > MAX_DEPTH), (make(3), n)


def test_a_deep_module_does_not_stop_the_project_scan(tmp_path: Path) -> None:
    """The facts read across files before the run (CUDA-only code of imported modules) met the
    stdlib parser's RecursionError outside per-file isolation: exit 3."""
    src = tmp_path / "p"
    src.mkdir()
    (src / "main.py").write_bytes(b"import torch\nimport kern\nif x.is_cuda:\n    kern.f(x)\n")
    deep = b"import triton\n@triton.jit\ndef f(x):\n    pass\ny = 1" + b" + 1" * 12000 + b"\n"
    (src / "kern.py").write_bytes(deep)
    done = tool("-i", str(src), "-o", str(tmp_path / "o"), "--no-cache", timeout=60)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "o/p_msft/kern.py").read_bytes() == deep


def test_an_error_raised_while_an_interrupt_unwinds_is_the_interrupt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C landing in the engine, then a ``finally`` of the engine failing on the half-done
    state (an AttributeError with the KeyboardInterrupt as its context): the run is interrupted
    (exit 130), not the file recorded as failed and the run going on (exit 1)."""
    from ms_fmk_transplt.run import file_migration
    from ms_fmk_transplt.tables import load_tables

    def interrupted(*_args: object, **_kwargs: object) -> object:
        try:
            raise KeyboardInterrupt
        finally:
            raise AttributeError("advice")  # noqa: B012 - what a release in a finally did

    monkeypatch.setattr(file_migration, "migrate_source", interrupted)
    path = tmp_path / "train.py"
    path.write_text("import torch\nx = torch.ones(1).cuda()\n")
    with pytest.raises(KeyboardInterrupt):
        file_migration.migrate_file(path, "train.py", load_tables())
    monkeypatch.setattr(
        file_migration, "migrate_source", lambda *a, **k: (_ for _ in ()).throw(AttributeError())
    )
    _, record = file_migration.migrate_file(path, "train.py", load_tables())
    assert record.status.value == "failed"  # a plain error is still the file's failure
