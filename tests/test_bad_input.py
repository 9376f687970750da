"""Whatever it is fed, the tool keeps working, never modifies the input, never leaves a
half-written output, and answers bad input with one clear line."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import without_root_powers

from ms_fmk_transplt.commands.cli import main

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from synthetic_zoo import generate  # noqa: E402

CUDA = b"import torch\nx = torch.ones(1).cuda()\n"


def migrate(src: Path, out: Path, *extra: str):
    result = CliRunner().invoke(main, ["-q", "-i", str(src), "-o", str(out), *extra])
    return result.exit_code, result.output


def log_of(out: Path) -> str:
    return next(out.glob("*_msft")).joinpath("msFmkTranspltlog.txt").read_text()


def test_size_limit(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    big = CUDA + b"y = 1\n" * 4000
    (tmp_path / "p" / "gen.py").write_bytes(big)
    code, _ = migrate(tmp_path / "p", tmp_path / "o", "--max-file-size", "0.01")
    assert code == 0 and (tmp_path / "o/p_msft/gen.py").read_bytes() == big
    assert "larger than 0.01 MiB" in log_of(tmp_path / "o")
    code, _ = migrate(tmp_path / "p", tmp_path / "o2")
    assert b".npu()" in (tmp_path / "o2/p_msft/gen.py").read_bytes()


def test_symlinks_are_kept_as_links_never_followed(tmp_path: Path) -> None:
    src = tmp_path / "p"
    src.mkdir()
    (src / "a.py").write_bytes(CUDA)
    os.symlink("..", src / "loop")  # a loop
    os.symlink("/etc/hostname", src / "outside")  # outside the tree
    os.symlink("a.py", src / "alias.py")  # inside
    code, _ = migrate(src, tmp_path / "o")
    assert code == 0
    out = tmp_path / "o/p_msft"
    assert os.readlink(out / "loop") == ".." and os.readlink(out / "outside") == "/etc/hostname"
    assert os.readlink(out / "alias.py") == "a.py" and b".npu()" in (out / "a.py").read_bytes()


FILES = 8000  # the run takes a few seconds: long enough to be interrupted in the middle


def _written(out: Path, name: str = "zoo") -> int:
    """Files written so far in the staging folder of a running migration."""
    stagings = out.glob(f".{name}_msft.partial-*")
    return sum(len(files) for staging in stagings for _, _, files in os.walk(staging))


@pytest.mark.parametrize(
    ("sig", "jobs"),
    # Ctrl-C in a terminal signals the whole process group, workers included; a service
    # manager's SIGTERM goes to the tool's own process
    [(signal.SIGINT, "2"), (signal.SIGTERM, "1"), (signal.SIGTERM, "2")],
)
def test_interrupted_run_leaves_no_tree(tmp_path: Path, sig, jobs: str) -> None:
    zoo = generate(tmp_path / "zoo", FILES)
    out = tmp_path / "out"
    args = ["-q", "-i", str(zoo), "-o", str(out), "-j", jobs, "--no-cache"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ms_fmk_transplt", *args],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.time() + 60
    while time.time() < deadline and _written(out) < 40:  # well into the run, far from its end
        time.sleep(0.01)
    if sig == signal.SIGINT:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, (
        stderr,
        sorted(p.name for p in out.iterdir()) if out.exists() else None,
    )
    log = out / "zoo_msft.interrupted.log"
    assert f"interrupted: nothing was written (the partial output was removed); log: {log}" in (
        stderr
    )
    assert not (out / "zoo_msft").exists() and not list(out.glob(".zoo_msft*"))
    # the log says the run was interrupted, by what, and how far it got
    last = log.read_text(encoding="utf-8").splitlines()[-1]
    name = "Ctrl-C (SIGINT)" if sig == signal.SIGINT else "SIGTERM"
    match = re.search(
        rf"ERROR   run interrupted by {re.escape(name)} after (\d+) of {FILES} files", last
    )
    assert match and 0 < int(match[1]) < FILES, last
    assert "nothing was kept" in last and "the input was not modified" in last
    assert stderr.count("\n") == 1, stderr  # one line: no worker tracebacks


def tool(*args: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "ms_fmk_transplt", "-q", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_killed_run_leaves_only_a_hidden_partial_folder_cleaned_by_the_next_run(
    tmp_path: Path,
) -> None:
    """SIGKILL cannot be caught: the staging folder stays, hidden and named partial, never a
    <name>_msft that looks complete; the next run removes it."""
    zoo = generate(tmp_path / "zoo", FILES)
    out = tmp_path / "out"
    args = ["-i", str(zoo), "-o", str(out), "-j", "1", "--no-cache"]
    proc = subprocess.Popen([sys.executable, "-m", "ms_fmk_transplt", "-q", *args])
    deadline = time.time() + 60
    while time.time() < deadline and _written(out) < 40:
        time.sleep(0.01)
    proc.kill()
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    leftovers = sorted(p.name for p in out.iterdir())
    assert leftovers == [f".zoo_msft.partial-{proc.pid}"]
    again = tool(*args, "-j", "2")
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in out.iterdir()) == ["zoo_msft"]
    log = (out / "zoo_msft" / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert f"removed {out / leftovers[0]}, left behind by a run that was killed" in log


def test_internal_error_stops_the_run_with_exit_3_and_a_log(tmp_path: Path, monkeypatch) -> None:
    """A bug outside per-file isolation (here: in a report writer) loses nothing either."""
    from ms_fmk_transplt.report import unsupported_op as unsupported

    def broken(*_args) -> None:
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(unsupported, "write_xlsx", broken)
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a.py").write_bytes(CUDA)
    code, text = migrate(tmp_path / "p", tmp_path / "o")
    log = tmp_path / "o" / "p_msft.interrupted.log"
    assert code == 3
    assert text.strip() == (
        "ms_fmk_transplt: internal error: RuntimeError: simulated bug; nothing was written "
        f"(traceback in {log}); please report it"
    )
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["p_msft.interrupted.log"]
    content = log.read_text(encoding="utf-8")
    assert "analysed a.py: 2 change(s)" in content and "in broken" in content
    assert "run stopped by an internal error (RuntimeError: simulated bug) after 1 of 1" in content
    # the next good run removes the stale log and says so
    monkeypatch.undo()
    code, _ = migrate(tmp_path / "p", tmp_path / "o")
    assert code == 0 and not log.exists()
    assert f"removed {log}, the log of an earlier run that was interrupted" in log_of(
        tmp_path / "o"
    )


def test_signal_that_surfaces_as_another_error_is_an_interruption(
    tmp_path: Path, monkeypatch
) -> None:
    """SIGTERM's KeyboardInterrupt raised inside a lock's restore in multiprocessing surfaces as
    ``RuntimeError: release unlocked lock`` (seen in CI): still an interruption, exit 130."""
    from ms_fmk_transplt.report import unsupported_op as unsupported
    from ms_fmk_transplt.run import staging

    def interrupted_then_broken(*_args) -> None:
        staging.INTERRUPTED.set()  # what the signal handler does before raising
        raise RuntimeError("release unlocked lock")

    monkeypatch.setattr(unsupported, "write_xlsx", interrupted_then_broken)
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a.py").write_bytes(CUDA)
    code, text = migrate(tmp_path / "p", tmp_path / "o")
    assert code == 130, text
    assert "internal error" not in text
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["p_msft.interrupted.log"]


# --- real permissions and a real full disk --------------------------------------------------


@pytest.fixture
def locked(tmp_path: Path):
    """chmod for the test; everything made accessible again afterwards for cleanup."""
    changed: list[Path] = []

    def lock(path: Path, mode: int) -> None:
        changed.append(path)
        path.chmod(mode)

    yield lock
    for path in reversed(changed):
        path.chmod(0o755)


def project_with(tmp_path: Path, n: int = 1) -> Path:
    src = tmp_path / "p"
    src.mkdir()
    for i in range(n):
        (src / f"m{i:02}.py").write_bytes(CUDA)
    return src


@pytest.mark.parametrize("files", [1, 40])  # 40: through the worker pool
def test_unreadable_file(tmp_path: Path, locked, files: int) -> None:
    prefix = needs_permission_bits(tmp_path)
    src = project_with(tmp_path, files)
    secret = src / "secret.py"
    secret.write_bytes(CUDA)
    locked(secret, 0)
    before = sorted(p.name for p in src.iterdir())
    done = tool("-i", str(src), "-o", str(tmp_path / "o"), "-j", "2", prefix=prefix)
    assert done.returncode == 2
    assert done.stderr == (
        f"ms_fmk_transplt: error: {secret}: cannot read this file (Permission denied)\n"
    )
    assert list((tmp_path / "o").iterdir()) == []  # not even a staging folder
    assert sorted(p.name for p in src.iterdir()) == before


def test_unreadable_input_file_given_directly(tmp_path: Path, locked) -> None:
    prefix = needs_permission_bits(tmp_path)
    src = project_with(tmp_path)
    locked(src / "m00.py", 0)
    done = tool("-i", str(src / "m00.py"), "-o", str(tmp_path / "o"), prefix=prefix)
    assert done.returncode == 2
    assert done.stderr == (
        f"ms_fmk_transplt: error: {src / 'm00.py'}: cannot read this file (Permission denied)\n"
    )


def test_full_disk(tmp_path: Path) -> None:
    """The output goes to a 64 KiB tmpfs (a private mount namespace, root only)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare to mount a small tmpfs")
    src = project_with(tmp_path)
    (src / "weights.bin").write_bytes(os.urandom(200_000))
    disk = tmp_path / "disk"
    disk.mkdir()
    script = (
        'mount -t tmpfs -o size=64k tmpfs "$1" || exit 99; shift; "$@"; echo "rc=$?"; '
        'ls -A /dev/null "$0"; cat "$0"/p_msft.interrupted.log'
    )
    cmd = [sys.executable, "-m", "ms_fmk_transplt", "-q", "-i", str(src), "-o", str(disk)]
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, str(disk), str(disk), *cmd],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if "rc=" not in done.stdout:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    assert "rc=2" in done.stdout
    assert done.stderr == (
        f"ms_fmk_transplt: error: {disk / 'p_msft' / 'weights.bin'}: "
        "cannot write (No space left on device); "
        "nothing was written\n"
    )
    listing = done.stdout.split("rc=2", 1)[1]
    assert "p_msft.interrupted.log" in listing and ".p_msft" not in listing
    assert "run stopped, cannot write" in listing and "No space left on device" in listing


def needs_permission_bits(tmp_path: Path) -> tuple[str, ...]:
    prefix = without_root_powers(tmp_path)
    if prefix is None:
        pytest.skip("cannot make permission bits apply here (root without setpriv)")
    return prefix


def test_check_diff_inplace_refuse_what_they_cannot_read_or_replace(tmp_path: Path, locked) -> None:
    """The file modes check everything before touching anything: one line, exit 2."""
    prefix = needs_permission_bits(tmp_path)
    src = project_with(tmp_path, 2)
    (src / "locked").mkdir()
    (src / "ro").mkdir()
    (src / "ro" / "c.py").write_bytes(CUDA)
    locked(src / "m01.py", 0)
    locked(src / "locked", 0)
    locked(src / "ro", 0o555)
    cases = [
        (["--check", str(src / "m01.py")], f"{src / 'm01.py'}: cannot read this file"),
        (["--diff", str(src)], f"{src / 'locked'}: cannot read this folder (Permission denied)"),
        (
            ["--inplace", str(src / "m00.py"), str(src / "ro" / "c.py")],
            f"{src / 'ro'}: folder is not writable (--inplace replaces files through it)",
        ),
    ]
    for args, message in cases:
        done = subprocess.run(
            [*prefix, sys.executable, "-m", "ms_fmk_transplt", *args],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"ms_fmk_transplt: error: {message}"), done.stderr
        assert done.stderr.count("\n") == 1
    assert (src / "m00.py").read_bytes() == CUDA  # checked first: not rewritten either


def test_interrupted_zoo_keeps_finished_models(tmp_path: Path) -> None:
    for model in ("a", "b"):
        generate(tmp_path / "zoo" / model, FILES // 2)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ms_fmk_transplt", "-q", "-i", str(tmp_path / "zoo"), "-o"]
        + [str(out), "--zoo", "-j", "1", "--no-cache"],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 120
    while time.time() < deadline and _written(out, "b") < 40:
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert stderr == (
        "ms_fmk_transplt: interrupted: the model in progress was not written (models finished "
        f"before are complete; no zoo summary was written); log: {out / 'b_msft.interrupted.log'}\n"
    )
    assert sorted(p.name for p in out.iterdir()) == ["a_msft", "b_msft.interrupted.log"]
    assert "migration completed successfully" in log_of_dir(out / "a_msft")


def log_of_dir(folder: Path) -> str:
    return (folder / "msFmkTranspltlog.txt").read_text(encoding="utf-8")


def test_unreadable_notebook_is_skipped_and_reported(tmp_path: Path) -> None:
    src = tmp_path / "proj"
    src.mkdir()
    (src / "train.py").write_bytes(CUDA)
    (src / "broken.ipynb").write_bytes(b'{"cells": [ not json')
    code, output = migrate(src, tmp_path / "out")
    assert code == 0, output
    out = tmp_path / "out" / "proj_msft"
    assert (out / "broken.ipynb").read_bytes() == b'{"cells": [ not json'  # copied unchanged
    rows = (out / "unsupported_op.csv").read_text(encoding="utf-8").splitlines()
    broken = [r for r in rows if r.startswith("broken.ipynb,")]
    assert len(broken) == 1 and broken[0].endswith(",manual,parse.decode_error"), rows
