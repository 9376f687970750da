"""Issue 42, bounds and interruptions: a tree too deep or a path too long for the system is a
warning, not a traceback; one huge statement stays within a file's memory bound; an interrupted
kit leaves no tree; SIGTERM early in --merge-shards is an interruption like any other (exit 130,
one line, the interrupted.log). Each runs the real command in a subprocess; the interruptions
are sent by a driver that wraps one function of the tool (as test_trust_bounds.py's SLOW), so
they land at a known step."""

from __future__ import annotations

import hashlib
import os
import resource
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ms_fmk_transplt.safety.parse_bounds import MAX_PARSE_TOKENS
from ms_fmk_transplt.scan.discover import MAX_DEPTH

ROOT = Path(__file__).resolve().parent.parent  # the checkout (the package may be installed)
PROJECTS = ROOT / "fixtures" / "projects"
CUDA = b"import torch\nx = torch.ones(1).cuda()\n"
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path]),
    "MS_FMK_TRANSPLT_CACHE": "off",
}


def tool(
    *args: str, driver: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    head = ["-c", driver] if driver else ["-m", "ms_fmk_transplt"]
    return subprocess.run(
        [sys.executable, *head, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ENV,
    )


def digest(root: Path) -> str:
    """The tree's names and bytes (walked without recursion: a deep tree is no trouble)."""
    out = hashlib.sha256()
    stack = [root]
    while stack:
        folder = stack.pop()
        for path in sorted(folder.iterdir(), reverse=True):
            if path.is_dir() and not path.is_symlink():
                stack.append(path)
            else:
                out.update(str(path.relative_to(root)).encode() + path.read_bytes())
    return out.hexdigest()


# -- 1. a tree deeper than the walk goes ------------------------------------------------------
def _nest(root: Path, levels: int) -> Path:
    """``root/d/d/.../d`` ``levels`` deep, made one level at a time (relative to a descriptor:
    no path is ever longer than one name)."""
    here = os.open(root, os.O_RDONLY)
    try:
        for _ in range(levels):
            os.mkdir("d", dir_fd=here)
            below = os.open("d", os.O_RDONLY, dir_fd=here)
            os.close(here)
            here = below
        fd = os.open("deep.py", os.O_WRONLY | os.O_CREAT, dir_fd=here)
        os.write(fd, CUDA)
        os.close(fd)
    finally:
        os.close(here)
    return root


def _remove_nest(root: Path) -> None:
    """rmtree recurses once per level (RecursionError on Python < 3.12): removed from the
    bottom up, one level at a time."""
    levels = []
    here = root
    while (here / "d").is_dir():
        here = here / "d"
        levels.append(here)
    for folder in reversed(levels):
        for entry in folder.iterdir():
            if not entry.is_dir():
                entry.unlink()
        folder.rmdir()


@pytest.mark.parametrize("mode", ["run", "zoo", "check"])
def test_a_thousand_nested_folders_are_a_warning_not_a_traceback(tmp_path: Path, mode: str) -> None:
    """Issue 42: RecursionError (a traceback) walking the input (the run, the zoo's search for
    models, --check); now the folder past the 128th level is left out with a WARNING (a
    notice with --check) and the rest is migrated."""
    zoo = tmp_path / "zoo"
    src = zoo / "p"
    src.mkdir(parents=True)
    (src / "train.py").write_bytes(CUDA)
    skipped = "/".join(["d"] * (MAX_DEPTH + 1))
    try:
        _nest(src, 1000)
        before = digest(src)
        if mode == "check":
            done = tool("--check", str(src))
            assert done.returncode == 1, done.stderr  # (findings: train.py)
            assert done.stderr.splitlines()[0] == (
                f"ms_fmk_transplt: notice: {src / skipped}: a folder nested more than "
                f"{MAX_DEPTH} levels deep: skipped"
            )
            assert "1 file(s) checked" in done.stderr and "Traceback" not in done.stderr
            assert "train.py:2:" in done.stdout
        else:
            args = ("-i", str(zoo), "--zoo") if mode == "zoo" else ("-i", str(src))
            done = tool("-q", *args, "-o", str(tmp_path / "o"))
            assert done.returncode == 0, done.stderr
            assert done.stderr == ""
            out = tmp_path / "o" / "p_msft"
            assert b".npu()" in (out / "train.py").read_bytes()
            log = (out / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
            assert (
                f"WARNING {skipped}: a folder nested more than {MAX_DEPTH} levels deep: not read "
                "and not copied"
            ) in log
            assert log.count(" WARNING ") == 1, log
            assert not (out / "d").exists()  # (no file below: no folder)
        assert digest(src) == before
    finally:
        _remove_nest(src)


# -- 2. a file's memory ------------------------------------------------------------------------
MEMORY_BOUND_MIB = 1024  # docs/options.md, "Large trees": a file's migration stays under 1 GiB

# runs the command and prints the peak RSS (KiB on Linux) of the largest process it started,
# the tool or one of its workers (each process's own peak: the bound is per process)
MEASURE = textwrap.dedent(
    """
    import resource, subprocess, sys
    done = subprocess.run([sys.executable, "-m", "ms_fmk_transplt", *sys.argv[1:]])
    print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    """
)


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB (Linux)")
@pytest.mark.parametrize("jobs", ["1", "2"], ids=["in-process", "workers"])
def test_a_30_mb_file_of_one_statement_stays_under_the_memory_bound(
    tmp_path: Path, jobs: str
) -> None:
    """Issue 42: a 30 MB file that is one statement took 5.26 GB (14.6 GB with 15 million
    items): the stdlib parser needs about 1 KB per token. It is now refused before it is
    parsed (parse.limit), and copied unchanged."""
    src = tmp_path / "p"
    src.mkdir()
    big = CUDA + b"y = [" + b"1," * 15_000_000 + b"]\n"
    (src / "big.py").write_bytes(big)
    for i in range(20 if jobs == "2" else 0):  # enough files for the worker pool
        (src / f"m{i:02}.py").write_bytes(CUDA)
    args = ["-q", "-i", str(src), "-o", str(tmp_path / "o"), "-j", jobs]
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, *args], capture_output=True, text=True, env=ENV
    )
    code, peak_kib = map(int, done.stdout.split())
    assert code == 0, done.stderr
    assert peak_kib / 1024 < MEMORY_BOUND_MIB / 2, peak_kib  # (measured: about 200 MiB)
    out = tmp_path / "o" / "p_msft"
    assert (out / "big.py").read_bytes() == big
    log = (out / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert (
        "big.py:1: [parse.limit] line 1: a statement too large to parse within the memory bound "
        f"(about 15,000,016 tokens in 28.6 MiB parsed at once, more than {MAX_PARSE_TOKENS:,}: "
        "its syntax tree would need more than 1 GiB); copied unchanged"
    ) in log
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 < MEMORY_BOUND_MIB


def test_a_large_statement_within_the_bound_is_migrated(tmp_path: Path) -> None:
    """The guard only looks at a text parsed at once larger than 1 MiB, and refuses it only
    past MAX_PARSE_TOKENS: a 3 MiB statement of ordinary code is migrated."""
    from helpers import tables_for

    from ms_fmk_transplt.engine import migrate_source

    row = b'    "w%06d": torch.ones(3).cuda(),  # a weight of layer %06d\n'
    source = b"import torch\nweights = {\n" + b"".join(row % (i, i) for i in range(60_000))
    source += b"}\n"
    assert len(source) > 3 * 2**20
    result = migrate_source(source, "w.py", tables_for())
    assert result.output.count(b".npu()") == 60_000


# -- 3. an interrupted kit leaves nothing ------------------------------------------------------
# wraps tree_migration.migrate_tree (the tree of one side): the signal arrives while the
# side's tree is being made; "between": run_cli.run (the run of one side), after it returned
DRIVER = textwrap.dedent(
    """
    import os, signal, sys
    from ms_fmk_transplt.commands import run_cli
    from ms_fmk_transplt.run import tree_migration
    from ms_fmk_transplt.commands.launch import entry

    WHEN, SIG = sys.argv.pop(1), getattr(signal, sys.argv.pop(1))
    real_tree, real_run = tree_migration.migrate_tree, run_cli.run

    def tree(project, staging, result, *args, **kwargs):
        if (WHEN == "gpu") == result.options.kit_gpu_side and WHEN != "between":
            os.kill(os.getpid(), SIG)
        return real_tree(project, staging, result, *args, **kwargs)

    def run(options, *args, **kwargs):
        result = real_run(options, *args, **kwargs)
        if WHEN == "between" and options.kit_gpu_side:
            os.kill(os.getpid(), SIG)
        return result

    tree_migration.migrate_tree, run_cli.run = tree, run
    sys.argv[0] = "ms_fmk_transplt"
    entry()
    """
)


@pytest.mark.parametrize(
    ("when", "sig"),
    [("npu", "SIGINT"), ("npu", "SIGTERM"), ("between", "SIGTERM"), ("between", "SIGINT")],
)
def test_an_interrupted_precision_kit_leaves_no_tree(tmp_path: Path, when: str, sig: str) -> None:
    """Issue 42: the GPU tree (<name>_gpu_precision) was kept while the line said "nothing
    was written", and the next run was refused because it existed."""
    project, out = PROJECTS / "precision_pair", tmp_path / "out"
    before = digest(project)
    kit = ["kit", "precision", "-q", "-i", str(project), "-o", str(out), "-m", "train.py"]
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, when, sig, *kit, "--no-cache"],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
    )
    assert done.returncode == 130, done.stderr
    log = out / "precision_pair_msft_precision.interrupted.log"
    assert done.stderr.startswith(
        "ms_fmk_transplt: interrupted: nothing was written (the partial output was removed)"
    ), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    if when == "npu":
        assert done.stderr.endswith(f"; log: {log}\n")
        name = "Ctrl-C (SIGINT)" if sig == "SIGINT" else "SIGTERM"
        assert f"run interrupted by {name} after " in log.read_text(encoding="utf-8")
    assert sorted(p.name for p in out.iterdir()) == ([log.name] if when == "npu" else [])
    assert digest(project) == before
    again = tool(*kit, "--no-cache")  # and the next run is not refused
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "precision_pair_gpu_precision",
        "precision_pair_msft_precision",
    ]


def test_an_interrupted_kit_keeps_the_trees_that_were_there(tmp_path: Path) -> None:
    """--overwrite: a kit interrupted on its GPU side removes nothing that existed before."""
    project, out = PROJECTS / "precision_pair", tmp_path / "out"
    kit = ["kit", "precision", "-q", "-i", str(project), "-o", str(out), "-m", "train.py"]
    assert tool(*kit, "--no-cache").returncode == 0
    trees = {p.name: digest(p) for p in out.iterdir()}
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, "gpu", "SIGTERM", *kit, "--overwrite", "--no-cache"],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
    )
    assert done.returncode == 130, done.stderr
    assert {p.name: digest(p) for p in out.iterdir() if p.is_dir()} == trees


# -- 4. SIGTERM early in --merge-shards ------------------------------------------------------
MERGE_DRIVER = textwrap.dedent(
    """
    import os, signal, sys
    from ms_fmk_transplt.run import shards
    from ms_fmk_transplt.commands.launch import entry

    real = shards.load_parts

    def load_parts(*args, **kwargs):  # the parts' records being read and checked
        os.kill(os.getpid(), signal.SIGTERM)
        return real(*args, **kwargs)

    shards.load_parts = load_parts
    sys.argv[0] = "ms_fmk_transplt"
    entry()
    """
)


def test_sigterm_while_the_parts_are_read_is_an_interruption(tmp_path: Path) -> None:
    """Issue 42: SIGTERM in the first ~30% of --merge-shards (before the output was being
    assembled) exited 143 without a word or a log."""
    src, out = tmp_path / "p", tmp_path / "o"
    src.mkdir()
    for i in range(6):
        (src / f"m{i}.py").write_bytes(CUDA)
    for part in ("1/2", "2/2"):
        assert tool("-q", "-i", str(src), "-o", str(out), "--shard", part).returncode == 0
    parts = sorted(p.name for p in out.iterdir())
    done = tool("-q", "-i", str(src), "-o", str(out), "--merge-shards", "2", driver=MERGE_DRIVER)
    log = out / "p_msft.interrupted.log"
    assert done.returncode == 130, done.stderr
    assert done.stderr == (
        "ms_fmk_transplt: interrupted: nothing was written (the partial output was removed); "
        f"log: {log}\n"
    )
    assert sorted(p.name for p in out.iterdir()) == sorted([*parts, log.name])  # parts kept
    last = log.read_text(encoding="utf-8").splitlines()[-1]
    assert "ERROR   run interrupted by SIGTERM after 0 of 0 files" in last, last
    merged = tool("-q", "-i", str(src), "-o", str(out), "--merge-shards", "2")
    assert merged.returncode == 0, merged.stderr
    assert sorted(p.name for p in out.iterdir()) == ["p_msft"]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def _catches_sigterm(pid: int) -> bool:
    """The process has a handler for SIGTERM (Linux: bit 15 of SigCgt in /proc/PID/status)."""
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) >> (signal.SIGTERM - 1) & 1)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc")
def test_sigterm_while_the_tool_is_loading_is_one_line(tmp_path: Path) -> None:
    """Issue 42: the tool takes about half a second to load its modules before a run installs
    its handlers; SIGTERM then killed it without a word (exit 143). Sent as soon as the entry
    point catches it (before, the first handler was the run's), while the tool is loading: one
    line, exit 130, nothing written."""
    src, out = tmp_path / "p", tmp_path / "o"
    src.mkdir()
    (src / "m.py").write_bytes(CUDA)
    command = [sys.executable, "-m", "ms_fmk_transplt", "-q", "-i", str(src), "-o", str(out)]
    env = {**os.environ, **ENV}
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    while proc.poll() is None and not _catches_sigterm(proc.pid):
        pass  # (a busy wait of a few milliseconds: the entry point is the first thing it runs)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert stderr == "ms_fmk_transplt: interrupted while starting: nothing was written\n"
    assert not out.exists()
