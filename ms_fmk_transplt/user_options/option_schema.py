"""Every option of every command, declared once (``SCHEMA``): its flags, click settings and help,
the commands that take it, its ``[tool.ms_fmk_transplt]`` key in pyproject.toml (if any), the
``RunOptions`` field it sets and whether it changes a run's results.

Derived from it: the click parameters of each command (``click_params``, ``options_of``), the
pyproject keys with the kind of value each takes (``KEYS``, checked by ``config_file.py``), the
fields the cache fingerprint holds by value (``RESULT_FIELDS``, ``pipeline.py``) and RunOptions
itself (``run_options.py``). Light to import: a one-file ``--check`` and ``--help`` load it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import click

from ms_fmk_transplt.user_options.option_values import (
    MAX_FILE_MIB,
    MAX_FILE_SECONDS,
    MAX_JOBS,
    Bounded,
)
from ms_fmk_transplt.user_options.shell_values import (
    ShellPath,
    complete_rule_ids,
    complete_versions,
)
from ms_fmk_transplt.user_options.terminal import COLOR_CHOICES

# the commands: the migration (-i/-o), its ``distributed`` sub-command, the path modes
# (--check/--diff/--inplace) and ``kit aoe|profile|precision``
RUN, DISTRIBUTED, PATHS, KIT = "run", "distributed", "paths", "kit"
COMMANDS = (RUN, DISTRIBUTED, PATHS, KIT)
KINDS = ("aoe", "profile", "precision", "assess", "overflow")  # kit KIND

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Option:
    """One option (or argument) of the command line."""

    decls: tuple[str, ...]  # click's declarations: the flags and the parameter's name
    commands: tuple[str, ...]  # the commands that take it
    help: str = ""
    attrs: Mapping[str, Any] = field(default_factory=dict)  # click's other settings
    # what differs in one command: its help, click settings, and "after": the parameter it
    # follows in that command's help (when not the schema's order)
    per_command: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    run_field: str = ""  # the RunOptions field it sets ("": none; see run_options.py)
    result: bool = False  # changes a run's results: its field is in the cache fingerprint
    keys: tuple[str, ...] = ()  # its pyproject keys (several: their values add up)
    key_kind: str = ""  # what a key's value must be: version, ids, jobs, mib, path, bool
    negated: bool = False  # the key says the opposite of the flag (todo-comments = false)
    argument: bool = False  # a positional argument

    @property
    def param(self) -> str:
        """The click parameter's name (the key of its parsed value)."""
        named = [d for d in self.decls if not d.startswith("-")]
        if named:
            return named[-1]
        return max(self.decls, key=len).lstrip("-").replace("-", "_")

    def settings(self, command: str) -> dict[str, Any]:
        """click's settings of this option in ``command``."""
        out = {"help": self.help, **self.attrs, **self.per_command.get(command, {})}
        out.pop("after", None)
        if self.argument:
            out.pop("help")
        return out


IDS_HELP = "rule ids or id prefixes"
ISOLATED_HELP = (
    "Ignore pyproject.toml configuration (by default [tool.ms_fmk_transplt] of the nearest "
    "pyproject.toml having one, at or above {start} up to its project root (the first folder "
    "holding .git; {alone} alone without one), gives the options not given here)."
)
SCHEMA: tuple[Option, ...] = (
    Option(
        ("--check", "mode"),
        (PATHS,),
        "Report, write nothing; exit 1 on findings.",
        {"flag_value": "check"},
    ),
    Option(
        ("--diff", "mode"),
        (PATHS,),
        "Print the diff, write nothing; exit 1 if a file would change (as ruff --diff).",
        {"flag_value": "diff"},
    ),
    Option(
        ("--inplace", "--fix", "mode"),
        (PATHS,),
        "Migrate the files in place (--fix, as ruff spells it).",
        {"flag_value": "inplace"},
    ),
    Option(
        ("paths",), (PATHS,), attrs={"nargs": -1, "type": click.Path(readable=False)}, argument=True
    ),
    Option(
        ("kind",),
        (KIT,),
        attrs={"type": click.Choice(KINDS)},
        run_field="kit",
        result=True,
        argument=True,
    ),
    Option(
        ("-i", "--input", "input_path"),
        (RUN, KIT),
        "Folder of the GPU project, or a single .py file (its folder names the output).",
        {"required": True, "metavar": "PATH", "type": ShellPath()},
        {KIT: {"help": "The project."}},
        run_field="input",
    ),
    Option(
        ("-o", "--output", "output_path"),
        (RUN, KIT),
        "Folder in which <name>_msft is created (made if missing; not inside the input).",
        {"required": True, "metavar": "DIR", "type": ShellPath(folders=True)},
        {KIT: {"help": "Where the kit's tree goes."}},
        run_field="output",
    ),
    Option(
        ("-m", "--main", "main_file"),
        (DISTRIBUTED, KIT),
        "Entry script of the training (a .py file of the input, relative to it).",
        {"required": True, "metavar": "MAIN", "type": ShellPath()},
        {KIT: {"help": "The training script (a .py file of the input, relative to it)."}},
        run_field="main_script",
        result=True,
    ),
    Option(
        ("-t", "--target-model", "targets"),
        (DISTRIBUTED,),
        "Variable holding a model to wrap in DistributedDataParallel; repeat it, or give a "
        "comma-separated list, for several models (-t netD -t netG, -t netD,netG).",
        {"multiple": True, "default": ("model",), "show_default": True, "metavar": "MODEL"},
        run_field="distributed_target",
        result=True,
    ),
    Option(
        ("--no-rank-guards",),
        (DISTRIBUTED,),
        "Let every process save files and print per-step logs (default: rank 0 only).",
        {"is_flag": True},
        run_field="rank_guards",
        result=True,
    ),
    Option(
        ("--loop", "loop_file"),
        (KIT,),
        "The .py file of the input holding the training loop, when it is not MAIN (a trainer "
        "module MAIN imports): the calls go there, the launcher runs MAIN.",
        {"metavar": "FILE", "type": ShellPath()},
        run_field="kit_loop",
        result=True,
    ),
    Option(
        ("--steps", "kit_steps"),
        (KIT,),
        "kit assess: the training steps recorded (run_assess.sh's default MSFT_ASSESS_STEPS; 5 "
        "without it).",
        {"type": click.IntRange(1, 1000), "default": None, "metavar": "N"},
        run_field="kit_steps",
        result=True,
    ),
    Option(
        ("-r", "--rule", "rule_file"),
        (RUN, PATHS),
        "User rules (ArgsModifyRule, FuncNameModifyRule, ModuleNameModifyRule), applied first.",
        {"metavar": "JSON", "type": ShellPath()},
        {PATHS: {"help": "User rules (see -h of the main mode)."}},
        run_field="rule_file",
        result=True,
        keys=("rule-file",),
        key_kind="path",
    ),
    Option(
        ("-s", "--specify-device"),
        (RUN, PATHS),
        "Hard-coded device indices use the NPU in the DEVICE_ID environment variable (default 0).",
        {"is_flag": True},
        {PATHS: {"help": "Device from DEVICE_ID (see docs/options.md)."}},
        run_field="specify_device",
        result=True,
    ),
    Option(
        ("-sim", "--similar"),
        (RUN, PATHS),
        "Replace APIs the NPU lacks by similar ones (rules/similar_api.json; each has a caveat).",
        {"is_flag": True},
        {PATHS: {"help": "Similar-API replacements (see docs/options.md)."}},
        run_field="similar",
        result=True,
    ),
    Option(
        ("-v", "--target-version"),
        (RUN, PATHS, KIT),
        "torch_npu version the output targets (2.1.0, 2.6.0, 2.7.1, 2.8.0, ...; default the "
        "newest known): torch.npu names it lacks are left alone and reported, operator support "
        "and advice follow its documentation.",
        {"metavar": "X.Y.Z", "shell_complete": complete_versions},
        {
            PATHS: {"help": "torch_npu version (default the newest)."},
            KIT: {"help": "torch_npu version (as for a run)."},
        },
        run_field="target_version",
        result=True,
        keys=("target-version",),
        key_kind="version",
    ),
    Option(
        ("--fail-on",),
        (PATHS,),
        "--check (and what --inplace leaves) fails on changes, plus unsupported rows needing "
        "manual work, plus caveats.",
        {
            "type": click.Choice(["change", "manual", "caveat"]),
            "default": "manual",
            "show_default": True,
        },
    ),
    Option(
        ("--overwrite",),
        (RUN, KIT),
        "Replace an existing <name>_msft folder.",
        {"is_flag": True},
        {KIT: {"help": "Replace the kit's existing tree(s)."}},
        run_field="overwrite",
    ),
    Option(
        ("--analyse", "--analyze", "analyse"),
        (RUN,),
        "Analysis only: write the reports to OUTPUT/<name>_analysis, no migrated code.",
        {"is_flag": True},
        run_field="analyse",
        result=True,
    ),
    Option(
        ("-j", "--jobs"),
        (RUN, KIT),
        f"Worker processes (0: one per core; at most {MAX_JOBS}).",
        {"type": Bounded("jobs"), "default": 0, "show_default": "one per core", "metavar": "N"},
        {KIT: {"help": "Worker processes.", "show_default": False, "metavar": None}},
        run_field="jobs",
        keys=("jobs",),
        key_kind="jobs",
    ),
    Option(
        ("--no-cache",),
        (RUN, KIT),
        "Do not reuse or store cached results.",
        {"is_flag": True},
        run_field="use_cache",
    ),
    Option(
        ("--max-file-size", "max_file_mib"),
        (RUN,),
        "Larger files are copied unchanged (and reported). Default 32, and 5 for a file a "
        f"LibCST stage of -r/-sim/distributed acts on; 0.001 to {MAX_FILE_MIB}.",
        {"type": Bounded("mib"), "default": None, "metavar": "MIB"},
        run_field="max_file_mib",
        result=True,
        keys=("max-file-size",),
        key_kind="mib",
    ),
    Option(
        ("--file-timeout", "file_timeout"),
        (RUN,),
        "A file still being migrated after this long is copied unchanged (and reported), the "
        f"run goes on. Default 60; 0: no bound; at most {MAX_FILE_SECONDS}.",
        {"type": Bounded("seconds"), "default": None, "metavar": "SECONDS"},
        run_field="file_timeout",
        result=True,
    ),
    Option(
        ("--zoo",),
        (RUN,),
        "INPUT is a model zoo: migrate each sub-folder into OUTPUT/<model>_msft, plus "
        "OUTPUT/<zoo>_zoo_summary.csv/.xlsx.",
        {"is_flag": True},
    ),
    Option(
        ("--cache-dir",),
        (RUN, KIT),
        "Cache location (default ~/.cache/ms_fmk_transplt).",
        {"metavar": "DIR", "type": ShellPath(folders=True)},
        {KIT: {"help": "Cache location."}},
        run_field="cache_dir",
    ),
    Option(
        ("--shard",),
        (RUN,),
        "Migrate part I of N only (a stable split of the files, or of the models with --zoo), "
        "into <name>_msft.shard-I-of-N; for a CI matrix.",
        {"metavar": "I/N"},
        run_field="shard",
    ),
    Option(
        ("--merge-shards",),
        (RUN,),
        "Assemble <name>_msft (or the zoo summary) from the N parts written with --shard.",
        {"type": click.IntRange(min=1), "default": None, "metavar": "N"},
        run_field="merge_shards",
    ),
    Option(
        ("-q", "--quiet"),
        (RUN, PATHS, KIT),
        "Print only errors (no progress, no summary).",
        {"is_flag": True},
        {
            PATHS: {"help": "No summary line.", "after": "output_format"},
            KIT: {"help": "Print only errors."},
        },
    ),
    Option(("--verbose",), (RUN, KIT), "One line per Python file.", {"is_flag": True}),
    Option(
        ("--select",),
        (RUN, PATHS),
        f"Apply only these {IDS_HELP} (comma-separated or repeated).",
        {"multiple": True, "metavar": "IDS", "shell_complete": complete_rule_ids},
        {PATHS: {"help": f"Only these {IDS_HELP}."}},
        run_field="select",
        result=True,
        keys=("select",),
        key_kind="ids",
    ),
    Option(
        ("--ignore",),
        (RUN, PATHS),
        f"Do not apply these {IDS_HELP} (as `# msft: ignore[...]` on every line).",
        {"multiple": True, "metavar": "IDS", "shell_complete": complete_rule_ids},
        {PATHS: {"help": f"Not these {IDS_HELP}."}},
        run_field="ignore",
        result=True,
        keys=("ignore", "extend-ignore"),  # extend-ignore: added to ignore
        key_kind="ids",
    ),
    Option(
        ("--statistics",),
        (PATHS,),
        "Counts per rule and per file instead of findings.",
        {"is_flag": True},
    ),
    Option(
        ("--no-todo-comments",),
        (RUN,),
        "No `# msft: TODO[...]` comments on lines distributed -m could not finish (rows stay).",
        {"is_flag": True},
        run_field="todo_comments",
        result=True,
        keys=("todo-comments",),
        key_kind="bool",
        negated=True,
    ),
    Option(
        ("--deps", "deps"),
        (RUN,),
        "Analyse the installed libraries the project imports, found in DIR (a site-packages "
        "folder, a venv or a library's source tree; auto: $VIRTUAL_ENV's, else python3's): "
        "report the calls of their APIs that reach CUDA code, with the path (repeatable).",
        {"multiple": True, "metavar": "DIR|auto", "type": ShellPath(folders=True)},
        run_field="deps",
        result=True,
    ),
    Option(
        ("--assessed",),
        (RUN,),
        "Fold what a run of `kit assess` recorded (PATH: its assess/ folder or ops.csv) into "
        "unsupported_op: the APIs the steps ran that the target does not support or whose "
        "restriction the arguments hit, and shapes that changed between steps.",
        {"metavar": "PATH", "type": ShellPath()},
        run_field="assessed",
        result=True,
    ),
    Option(
        ("--library",),
        (RUN,),
        "With --analyse: INPUT is a library's source (a package, or a folder or source tree of "
        "them): also list its public APIs that reach CUDA code, with the path, in "
        "library_api.csv and the workbook's sheet Library APIs.",
        {"is_flag": True},
        run_field="library",
        result=True,
    ),
    Option(
        ("--npu-option", "npu_options"),
        (RUN,),
        "TensorFlow: set an Ascend TF adapter option (precision_mode, iterations_per_loop, "
        "...) in the NPURunConfig / npu_device configs the migration creates; checked against the "
        "adapter's documented options and values (repeatable).",
        {"multiple": True, "metavar": "NAME=VALUE"},
        run_field="npu_options",
        result=True,
    ),
    Option(
        ("--output-format", "--report-format", "output_format"),
        (RUN, PATHS),
        "json: print a machine-readable run summary (counts, per-file results, report paths); "
        "sarif: the open work and advice, in the migrated files (SARIF 2.1.0).",
        {"type": click.Choice(["text", "json", "sarif"]), "default": "text", "show_default": True},
        {
            PATHS: {
                "type": click.Choice(["text", "json", "github", "sarif"]),
                "help": "text (path:line:col: rule message), json, github (workflow "
                "annotations), sarif (2.1.0).",
            }
        },
    ),
    Option(
        ("--color",),
        (RUN, PATHS, KIT),
        "Colour the output: auto (a terminal, unless NO_COLOR is set), always, never.",
        {"type": click.Choice(COLOR_CHOICES), "default": "auto", "show_default": True},
        {KIT: {"help": "Colours.", "show_default": False}},
    ),
    Option(
        ("--isolated",),
        (RUN, PATHS, KIT),
        ISOLATED_HELP.format(start="INPUT", alone="INPUT's folder"),
        {"is_flag": True},
        {PATHS: {"help": ISOLATED_HELP.format(start="the first PATH", alone="the PATH's folder")}},
    ),
)
BY_PARAM = {o.param: o for o in SCHEMA}
# the pyproject keys, as the error line for an unknown key lists them (each key once, checked by
# tests/test_option_schema.py), and the kind of value each takes
KEY_ORDER: tuple[str, ...] = ("target-version", "select", "ignore", "extend-ignore")
KEY_ORDER += ("max-file-size", "jobs", "rule-file", "todo-comments")
KEYS = {key: next(o.key_kind for o in SCHEMA if key in o.keys) for key in KEY_ORDER}
# the RunOptions fields of the options that change results: the cache fingerprint holds them
RESULT_FIELDS = tuple(o.run_field for o in SCHEMA if o.result)


def click_params(command: str) -> list[click.Parameter]:
    """The click parameters of ``command``, in the order its help lists them."""
    taken = [o for o in SCHEMA if command in o.commands]
    order = [o for o in taken if "after" not in o.per_command.get(command, {})]
    for moved in [o for o in taken if o not in order]:
        after = moved.per_command[command]["after"]
        order.insert(next(i for i, o in enumerate(order) if o.param == after) + 1, moved)
    return [_param(o, command) for o in order]


def _param(option: Option, command: str) -> click.Parameter:
    if option.argument:
        return click.Argument(list(option.decls), **option.settings(command))
    return click.Option(list(option.decls), **option.settings(command))


def options_of(command: str) -> Callable[[F], F]:
    """Decorator giving a click command function the parameters of ``command`` (before any
    decorator written below it)."""

    def decorate(function: F) -> F:
        params = getattr(function, "__click_params__", [])
        # click lists a function's parameters in reverse order of their decorators
        function.__click_params__ = [*params, *reversed(click_params(command))]  # type: ignore[attr-defined]
        return function

    return decorate
