"""Stand-ins for running the shell scripts the tool writes (run_distributed_npu.sh, the kits'
launchers, compare.sh) without an NPU: PYTHON, aoe and msprobe record the arguments they were
given, one file per call (NUL after each argument), so a test reads back exactly what reached
the program (tests/test_hostile_names.py, tests/test_hostile_project.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# a training script every launcher and kit accepts: a model, an optimizer, a DataLoader, a loop
TRAINING_SCRIPT = """import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(2, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader([torch.zeros(2)] * 4, batch_size=2, shuffle=True)
for x in loader:
    opt.zero_grad()
    model(x.cuda()).sum().backward()
    opt.step()
"""

# PYTHON for the launchers: each call's arguments into a file of its own (NUL after each), the
# TF profile's PROFILING_OPTIONS beside them; then what each launcher checks for afterwards
STUB = r"""#!/bin/sh
call="$MSFT_CALLS/$$.$(date +%s%N)"
printf '%s\0' "$@" > "$call"
printf '%s' "${PROFILING_OPTIONS:-}" > "$call.profiling"
if [ -n "${MSFT_AOE_DUMP:-}" ]; then touch "$MSFT_AOE_DUMP/op.om"; fi
if [ -n "${MSFT_PROF_DIR:-}" ]; then mkdir -p "$MSFT_PROF_DIR/stub_ascend_pt"; fi
if [ -n "${MSFT_PRECISION_DUMP:-}" ]; then
  mkdir -p "$MSFT_PRECISION_DUMP/step0/rank" && touch "$MSFT_PRECISION_DUMP/step0/rank/dump.json"
fi
exit 0
"""
TOOL = '#!/bin/sh\nprintf \'%s\\0\' "$0" "$@" > "$MSFT_CALLS/tool.$$"\n'


def stand_ins(tmp_path: Path) -> dict[str, str]:
    """The environment the scripts run in: python, aoe and msprobe first on PATH and PYTHON
    the python stand-in, HOME ``tmp_path``, one NPU, logs under ``tmp_path``."""
    tools, calls = tmp_path / "bin", tmp_path / "calls"
    tools.mkdir()
    calls.mkdir()
    for name, text in (("python", STUB), ("aoe", TOOL), ("msprobe", TOOL)):
        (tools / name).write_text(text)
        (tools / name).chmod(0o755)
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("MSFT_", "PROFILING_"))}
    return {
        **keep,
        "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}",
        "PYTHON": str(tools / "python"),
        "MSFT_CALLS": str(calls),
        "HOME": str(tmp_path),
        "NPUS": "0",
        "LOG_DIR": str(tmp_path / "logs"),
        "ASCEND_SET_ENV": str(tmp_path / "no_set_env.sh"),
    }


def recorded_calls(env: dict[str, str]) -> tuple[list[list[bytes]], dict[bytes, list[bytes]]]:
    """The stand-ins' calls since the last read, then forgotten: PYTHON's (each call's
    arguments), and the tools' (by the tool's name)."""
    python, tools = [], {}
    for path in sorted(Path(env["MSFT_CALLS"]).iterdir()):
        args = path.read_bytes().split(b"\0")[:-1]
        if path.name.startswith("tool."):
            tools[os.path.basename(args[0])] = args[1:]
        elif not path.name.endswith(".profiling"):
            python.append(args)
        path.unlink()
    return python, tools


def run_script(script: Path, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """``bash script`` in ``cwd``; it must succeed."""
    proc = subprocess.run(["bash", str(script)], cwd=cwd, env=env, capture_output=True, timeout=60)
    assert proc.returncode == 0, (script, proc.stdout, proc.stderr)
    return proc


def assert_same_file(got: bytes, expected: Path) -> None:
    """``got`` (an argument a stand-in received) names the file ``expected``."""
    assert os.path.realpath(got) == os.path.realpath(os.fsencode(expected)), (got, expected)
