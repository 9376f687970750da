"""The rule of each category of open-work rows (rules/unsupported_api.json's categories): a row
of the unsupported-API table is recorded under ``unsupported.<category>``."""

from __future__ import annotations

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.rules.family_spec import Folding
from ms_fmk_transplt.engine.rules.libraries.library_rows import (
    CUDA_ONLY,
    THIRD_PARTY,
    fold_rows_per_api,
    row_rule,
)
from ms_fmk_transplt.events import Notice
from ms_fmk_transplt.tables.library_table import LibraryTable
from ms_fmk_transplt.tables.unsupported_table import Entry

_ROW = "Rows of this category are open work in unsupported_op.xlsx / .csv (action and tip per API)."
# Rows of the unsupported-API table (rules/unsupported_api.json) carry the rule of their category.
CATEGORY_RULES = {
    "cuda_only_api": declare(
        "unsupported.cuda_only_api",
        "a CUDA-only PyTorch API with no NPU counterpart: left unchanged, one row",
        "PyTorch APIs outside `torch.cuda` that exist only for NVIDIA GPUs (`torch.version.cuda`, "
        "...) are left in place and listed, with a tip naming the NPU replacement where there is "
        "one. (`torch.cuda.X` names torch_npu lacks are rows of device_api.no_npu_counterpart.) "
        + _ROW,
        kind=OPEN_WORK,
    ),
    "backend_switch": declare(
        "unsupported.backend_switch",
        "a cuDNN / CUDA backend switch (`torch.backends.cudnn.benchmark`, `allow_tf32`, ...)",
        "Switches of `torch.backends.cudnn` and `torch.backends.cuda` do nothing on the NPU (there "
        "is no cuDNN). Most are harmless and reported as caveats; the tip names the Ascend "
        "counterpart (AOE operator tuning, HF32 settings) where one exists. Naming a value or "
        "asking a question sets nothing and is no row (`SDPBackend.MATH`, `flash_sdp_enabled()`, "
        "`can_use_flash_attention(...)`: `rules/unsupported_api.json` action `none`). A switch "
        "set in several places of one file is one row listing the lines. " + _ROW,
        kind=OPEN_WORK,
    ),
    "environment": declare(
        "unsupported.environment",
        "a CUDA / NCCL environment variable without an exact Ascend counterpart",
        "Variables such as `CUDA_LAUNCH_BLOCKING`, `NCCL_DEBUG` or `CUDA_DEVICE_ORDER` are read by "
        "CUDA or NCCL only; on the NPU they have no effect. The tip names the Ascend variable "
        "with a similar role where there is one (variables with an exact counterpart are "
        "rewritten by environment.ascend_variable). A row is where the code reads or sets the "
        "variable or runs a command setting it; a name in the text of a message (a print, a "
        "log call, a warning, an exception, an argparse `help=`) is none, nor is a name in a "
        "list of variables the code removes (`for k in NAMES: os.environ.pop(k, None)`, `del "
        "os.environ[k]`), and a command in an f-string joined to other strings is read as "
        "one in a single string. A variable named in several places of one file is one row "
        "listing the lines (per action). The NCCL settings "
        "of one function (or of the module level) are one row listing them all: a caveat "
        "(hccl ignores them; the tip names the HCCL variable of the same purpose where the "
        "CANN docs have one), manual when one of them needs its HCCL counterpart set "
        "(`NCCL_SOCKET_IFNAME` -> `HCCL_SOCKET_IFNAME`). " + _ROW,
        kind=OPEN_WORK,
    ),
    "custom_cuda_code": declare(
        "unsupported.custom_cuda_code",
        "custom CUDA code: `cpp_extension` builds, `load_inline`, Triton/CuPy kernels, `.cu` files",
        "Hand-written CUDA kernels cannot run on an Ascend NPU; they must be replaced by an "
        "existing torch / torch_npu operator or ported to Ascend C. Each build call and each CUDA "
        "source file of the input is listed, and each import of a compiled CUDA extension: a "
        '`*_cuda` module, or one the project builds (`CUDAExtension("pkg._C", ...)` in its '
        "setup.py, `cpp_extension.load(name=...)` of CUDA sources; `from pkg import _C` in any "
        "file), saying where it is built. A `cpp_extension.load` given nvcc flags "
        "(`extra_cuda_cflags`) but a literal list of C/C++ files only builds a CPU extension: "
        "its row is a caveat. The rows of one API in one file are one row listing the "
        "lines. " + _ROW,
        kind=OPEN_WORK,
    ),
    "third_party": CUDA_ONLY,  # folded per file and library: libraries/library_rows.py
    "data_parallel": declare(
        "unsupported.data_parallel",
        "`torch.nn.DataParallel`: not supported on the NPU",
        "DataParallel (one process driving several devices) is not supported by torch_npu; use "
        "DistributedDataParallel with one process per NPU, which `ms_fmk_transplt ... distributed "
        "-m MAIN` sets up for a single-card script. A type test (`isinstance(m, "
        "nn.DataParallel)`, `issubclass`, `type(m) is` / `in` ...) is not a use: no row. " + _ROW,
        kind=OPEN_WORK,
    ),
    "launch_config": declare(
        "unsupported.launch_config",
        "a launch script, config file or command line that passes `cuda` / `nccl` to the code",
        "The migrated code runs on `npu` with `hccl`, but the values it is given from "
        "outside still say `cuda` / `nccl`: a shell script's `--dist-backend nccl` or "
        "`CUDA_VISIBLE_DEVICES=0`, a YAML/JSON/TOML config's `device: cuda`, a command "
        'line in a Python string (`"torchrun train.py --backend nccl"`). They override the '
        "migrated defaults, so the run would ask for CUDA again. A shell script that reads "
        '`CUDA_VISIBLE_DEVICES` (`"${CUDA_VISIBLE_DEVICES:-0}"`, `<<< "$CUDA_VISIBLE_DEVICES"`) '
        "builds its device list from a variable that is unset on an NPU host: the list "
        "collapses to its default (ASCEND_RT_VISIBLE_DEVICES names the visible NPUs); the "
        "reads are listed too. Nothing in these files is "
        "rewritten (their values may be choices of the program, or read by other tools): "
        "each file gets one row listing the lines, each command string one row. A setting "
        "counts once per run: the rows of the same settings in three or more launch / config "
        "files (`device: cuda` in every recipe YAML) are one row, in the first file by path, "
        "whose tip says how many files set it and names the first three (`path:line`); "
        "msFmkTranspltlog.txt lists every `path:line` of it. The configuration of a CI "
        "service is not the program's: files under a `.github/`, `.gitlab/`, `.circleci/`, "
        "`.azure-pipelines/` or `.buildkite/` folder and `.gitlab-ci.yml`, "
        "`azure-pipelines*.yml`, `.travis.yml` get no row (their runner matrix's "
        '`device: "cuda"` chooses a CI machine). '
        "(`device=cuda` / `--device=cuda` words of a Python command string are migrated by "
        "device_strings.literal.) " + _ROW,
        kind=OPEN_WORK,
    ),
    "dynamic_device": declare(
        "unsupported.dynamic_device",
        "a device expression the engine cannot rewrite safely (built at run time)",
        'A device argument built at run time whose text still names cuda (`x.to(f"cuda{idx}")`, '
        '`device="cuda:" + kind + ":0"`) would still select CUDA on the NPU, and rewriting it '
        "piecewise is not safe. It is left unchanged and listed: make it produce `npu`. "
        "Likewise a parameter used as a device (`def move(batch, device): ... v.to(device)`) "
        "that a call in the same file fills with an integer device index "
        "(`move(batch, self.rank)`, recognised as device_strings.int_device recognises one): "
        "torch reads the int as a CUDA index; the parameter may also serve as a number, so "
        "nothing is rewritten and its first use as a device gets a caveat row naming the "
        "calls (calls from other files are not followed). "
        "Also listed: "
        "a library's own device spec naming cuda inside a longer string, passed as `device=`, "
        '`device_map=` or `strategy=` (RWKV\'s `strategy="cuda fp16 *10 -> cpu fp32"`): the '
        "library parses it itself, and whether it accepts `npu` there is its own affair. " + _ROW,
        kind=OPEN_WORK,
    ),
}


def category_rule(category: str) -> str:
    """The rule id of an unsupported-API row of this category."""
    return CATEGORY_RULES[category]


def open_work_rule(api: str, entry: Entry, libraries: LibraryTable) -> str:
    """The family's choice of a row's rule (Family.open_work_rule): a library's use is the
    libraries family's (cuda_only / npu_path), anything else its category's."""
    if entry.category == THIRD_PARTY:
        return row_rule(api, entry.action, libraries)
    return category_rule(entry.category)


# a setting counts once per file: these rows fold into one per file, API and action
FOLDED_PER_API = frozenset(
    CATEGORY_RULES[c] for c in ("environment", "backend_switch", "custom_cuda_code")
)


def fold(notices: list[Notice], done: Folding) -> list[Notice]:
    """The family's rows folded (Family.fold): ``CUDA_VISIBLE_DEVICES`` in every command of a
    test, ``cudnn.deterministic`` set in three places of one file: one row each, listing the
    lines (fold_rows_per_api)."""
    return fold_rows_per_api(notices, FOLDED_PER_API, done.migrated)
