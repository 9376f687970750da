"""Issue 44: a project of several files through the precision kit, and what each side's tree
holds. The GPU side (``<name>_gpu_precision``) is the project as written, with the kit's calls
in the -m script only: every other file byte for byte as the input, nothing migrated to the
NPU. The NPU side (``<name>_msft_precision``) is the project migrated: every other file as a
plain run writes it, the -m script migrated and with the same kit calls as the GPU side's."""

from __future__ import annotations

import csv
from pathlib import Path

from click.testing import CliRunner

from ms_fmk_transplt.commands.cli import main as run_main
from ms_fmk_transplt.commands.kit_cli import kit

FILES = {
    "train.py": """import torch
from torch.utils.data import DataLoader

from models.net import build
from tools.data import DEVICE

model = build()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader([torch.zeros(2)] * 4, batch_size=2)
for x in loader:
    opt.zero_grad()
    model(x.to(DEVICE)).sum().backward()
    opt.step()
torch.cuda.empty_cache()
""",
    "models/__init__.py": "",
    "models/net.py": """import torch


def build():
    torch.cuda.synchronize()
    return torch.nn.Linear(2, 2).cuda()
""",
    "tools/data.py": 'import torch\n\nDEVICE = torch.device("cuda:0")\n',
    "tools/run.sh": "python train.py\n",
    "notes.txt": "torch.cuda everywhere\n",
}
MIGRATED = ("models/net.py", "tools/data.py")  # the files a plain run changes
REPORTS = {"KIT_README.md", "advice.csv", "change_list.csv", "msFmkTranspltlog.txt", "report.html"}
REPORTS |= {"unsupported_op.csv", "unsupported_op.xlsx"}
# the GPU side is not migrated: no report of an NPU migration (open work, advice, the page)
GPU_REPORTS = REPORTS - {"unsupported_op.csv", "unsupported_op.xlsx", "advice.csv", "report.html"}
# besides the project and the reports: the kit's runtime, its config and launcher on each side;
# the comparison, run from the NPU side, only there
KIT_FILES = {"msft_kit.py", "msprobe_config.json", "run_precision.sh"}
COMPARE = {"compare.sh", "msft_compare.py"}


def _kit_calls(text: str) -> list[str]:
    """The lines of ``text`` that name the precision kit's runtime (msft_kit) or msprobe."""
    return [line.strip() for line in text.splitlines() if "msft_kit" in line or "msprobe" in line]


def _tree(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_each_side_of_the_precision_kit_holds_its_own_tree(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    for rel, text in FILES.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text, encoding="utf-8")
    common = ["-q", "--no-cache", "-i", str(project)]
    runner = CliRunner()
    done = runner.invoke(kit, ["precision", *common, "-o", str(tmp_path / "kit"), "-m", "train.py"])
    assert done.exit_code == 0, done.output
    done = runner.invoke(run_main, [*common, "-o", str(tmp_path / "plain")])
    assert done.exit_code == 0, done.output
    gpu, npu = tmp_path / "kit" / "proj_gpu_precision", tmp_path / "kit" / "proj_msft_precision"
    plain = tmp_path / "plain" / "proj_msft"
    for side, extra in ((gpu, GPU_REPORTS | KIT_FILES), (npu, REPORTS | KIT_FILES | COMPARE)):
        assert _tree(side) == set(FILES) | extra, side
    for rel in FILES:
        if rel == "train.py":
            continue
        assert (gpu / rel).read_bytes() == (project / rel).read_bytes(), rel
        assert (npu / rel).read_bytes() == (plain / rel).read_bytes(), rel
    for rel in MIGRATED:  # the plain run is no copy: the NPU side really is migrated
        assert (plain / rel).read_bytes() != (project / rel).read_bytes(), rel
    gpu_main, npu_main = (gpu / "train.py").read_text(), (npu / "train.py").read_text()
    assert "npu" not in gpu_main.replace("msft_kit", "")  # nothing of the NPU on the GPU side
    assert "torch.cuda.empty_cache()" in gpu_main and "torch.npu.empty_cache()" in npu_main
    assert "import torch_npu" in npu_main
    assert _kit_calls(gpu_main) and _kit_calls(gpu_main) == _kit_calls(npu_main)
    with (gpu / "change_list.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and {(r["File"], r["Rule"].split(".")[0]) for r in rows} == {("train.py", "kit")}
