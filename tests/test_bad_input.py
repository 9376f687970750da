"""Whatever it is fed, the tool keeps working, never modifies the input, never leaves a
half-written output, and answers bad input with one clear line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_fmk_transplt.cli import main

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench import generate  # noqa: E402

CUDA = b"import torch\nx = torch.ones(1).cuda()\n"


def migrate(src: Path, out: Path, *extra: str):
    result = CliRunner().invoke(main, ["-q", "-i", str(src), "-o", str(out), *extra])
    return result.exit_code, result.output


def log_of(out: Path) -> str:
    return next(out.glob("*_msft")).joinpath("msFmkTranspltlog.txt").read_text()


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("nul.py", b"import torch\x00\nx = torch.ones(1).cuda()\n", "null bytes"),
        (
            "deep.py",
            b"import torch\nx = " + b"(" * 3000 + b"torch.ones(1).cuda()" + b")" * 3000 + b"\n",
            "nested deeper than 200 levels",
        ),
        (
            "latin1.py",
            "# Entraînement\nimport torch\nx = torch.ones(1).cuda()\n".encode("latin-1"),
            "cannot decode",
        ),
        ("py2.py", b"import torch\nprint 'x', torch.cuda.device_count()\n", "Missing parentheses"),
    ],
)
def test_unparsable_inputs_are_copied_and_reported(tmp_path: Path, name, content, message) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / name).write_bytes(content)
    code, _ = migrate(tmp_path / "p", tmp_path / "o")
    assert code == 0
    assert (tmp_path / "o/p_msft" / name).read_bytes() == content
    assert message in log_of(tmp_path / "o")


def test_size_limit(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    big = CUDA + b"y = 1\n" * 4000
    (tmp_path / "p" / "gen.py").write_bytes(big)
    code, _ = migrate(tmp_path / "p", tmp_path / "o", "--max-file-size", "0.01")
    assert code == 0 and (tmp_path / "o/p_msft/gen.py").read_bytes() == big
    assert "larger than 0.01 MiB" in log_of(tmp_path / "o")
    code, _ = migrate(tmp_path / "p", tmp_path / "o2")
    assert b".npu()" in (tmp_path / "o2/p_msft/gen.py").read_bytes()


@pytest.mark.parametrize("content", [b"", b"# only a comment about cuda\n", b"\n\n\n"])
def test_empty_and_comment_only_files(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a.py").write_bytes(content)
    assert migrate(tmp_path / "p", tmp_path / "o")[0] == 0
    assert (tmp_path / "o/p_msft/a.py").read_bytes() == content


def test_spaces_and_non_ascii_paths(tmp_path: Path) -> None:
    src = tmp_path / "mon projet é"
    (src / "sous dossier").mkdir(parents=True)
    (src / "sous dossier" / "entraîner modèle.py").write_bytes(CUDA)
    code, text = migrate(src, tmp_path / "sortie ü")
    assert code == 0, text
    out = tmp_path / "sortie ü" / "mon projet é_msft" / "sous dossier" / "entraîner modèle.py"
    assert b".npu()" in out.read_bytes()


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


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_run_leaves_no_tree(tmp_path: Path, sig) -> None:
    zoo = generate(tmp_path / "zoo", 800)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ms_fmk_transplt",
            "-q",
            "-i",
            str(zoo),
            "-o",
            str(out),
            "-j",
            "1",
            "--no-cache",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 60
    while time.time() < deadline and not any(out.glob(".zoo_msft.partial-*")):
        time.sleep(0.05)
    time.sleep(1.0)  # well into the run
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, (
        stderr,
        sorted(p.name for p in out.iterdir()) if out.exists() else None,
    )
    assert "interrupted: nothing was written" in stderr
    assert not (out / "zoo_msft").exists() and not list(out.glob(".zoo_msft*"))


def test_unreadable_file_is_one_line_and_nothing_written(tmp_path: Path, monkeypatch) -> None:
    """Simulated: these tests run as root, where chmod cannot deny reading."""
    src = tmp_path / "p"
    src.mkdir()
    (src / "a.py").write_bytes(CUDA)
    (src / "secret.py").write_bytes(CUDA)
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.name == "secret.py":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    code, text = migrate(src, tmp_path / "o", "-j", "1")
    assert code == 2
    assert text.strip() == (
        f"ms_fmk_transplt: error: {src / 'secret.py'}: cannot read this file (Permission denied)"
    )
    assert not (tmp_path / "o" / "p_msft").exists()


def test_unreadable_folder_is_one_line_and_nothing_written(tmp_path: Path, monkeypatch) -> None:
    src = tmp_path / "p"
    (src / "locked").mkdir(parents=True)
    (src / "a.py").write_bytes(CUDA)
    real = os.scandir

    def scandir(path=".", *args):
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *args)

    monkeypatch.setattr(os, "scandir", scandir)
    code, text = migrate(src, tmp_path / "o")
    assert code == 2
    assert "locked: cannot read this folder (Permission denied)" in text
    assert not (tmp_path / "o" / "p_msft").exists()
