"""The per-version operator-support tables (rules/operator_support/<X.Y.Z>.json), as committed.

They are rebuilt from torch_npu's public API support lists by scripts/build_operator_support.py;
these tests read only the committed JSON (no Ascend/pytorch mirror), so they run anywhere. Besides
the structure they hold the tables to precision: the APIs of a plain training script (ResNet /
Transformer style) are never reported as unsupported, and restricted only at keyword arguments
such a script does not pass. ``test_the_checks_catch_bogus_tables`` proves the checks can fail.
"""

from __future__ import annotations

import copy
import json
import keyword
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SUPPORT_DIR = ROOT / "rules" / "operator_support"
UNSUPPORTED_TABLE = ROOT / "rules" / "unsupported_api.json"

KEYS = {"$comment", "source", "document_version", "rebuild", "entries"}
ENTRY_KEYS = {"api", "category", "tip", "keywords", "document"}
# tip is English; tip_original (the list's Chinese wording) only where it differs
CHINESE = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]")
CATEGORIES = {"unsupported_op", "restricted_op"}
SOURCE = re.compile(
    r"^Ascend/pytorch docs/\S+/pytorch_(\d+)-(\d+)-(\d+) at commit [0-9a-f]{40} "
    r"\(\d{4}-\d{2}-\d{2}\)$"
)
API = re.compile(r"^torch(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")

# What a plain training script calls (ResNet / Transformer style, see
# fixtures/projects/clean_model): never an unsupported_op row, and restricted only at arguments
# such a script does not pass.
PLAIN_SCRIPT = {
    "torch.nn.Conv2d",
    "torch.nn.BatchNorm2d",
    "torch.nn.Linear",
    "torch.nn.LayerNorm",
    "torch.nn.ReLU",
    "torch.nn.GELU",
    "torch.nn.Dropout",
    "torch.nn.CrossEntropyLoss",
    "torch.nn.MaxPool2d",
    "torch.nn.AdaptiveAvgPool2d",
    "torch.nn.Embedding",
    "torch.nn.Sequential",
    "torch.nn.functional.relu",
    "torch.nn.functional.gelu",
    "torch.nn.functional.dropout",
    "torch.nn.functional.cross_entropy",
    "torch.nn.functional.softmax",
    "torch.nn.functional.log_softmax",
    "torch.nn.functional.linear",
    "torch.nn.functional.layer_norm",
    "torch.optim.SGD",
    "torch.optim.AdamW",
    "torch.optim.Adam",
    "torch.utils.data.DataLoader",
    "torch.utils.data.Dataset",
    "torch.utils.data.DistributedSampler",
    "torch.flatten",
    "torch.cat",
    "torch.stack",
    "torch.matmul",
    "torch.argmax",
    "torch.no_grad",
    "torch.save",
    "torch.load",
    "torch.manual_seed",
}
PLAIN_SCRIPT_PREFIXES = ("torch.optim.lr_scheduler.",)
# Keyword arguments plain scripts pass to those APIs: a restriction keyed on one of them would
# report ordinary code.
PLAIN_ARGUMENTS = {
    "in_channels",
    "out_channels",
    "kernel_size",
    "stride",
    "padding",
    "bias",
    "num_features",
    "momentum",
    "eps",
    "affine",
    "in_features",
    "out_features",
    "normalized_shape",
    "elementwise_affine",
    "inplace",
    "p",
    "approximate",
    "weight",
    "reduction",
    "ignore_index",
    "label_smoothing",
    "output_size",
    "num_embeddings",
    "embedding_dim",
    "padding_idx",
    "dim",
    "dtype",
    "training",
    "lr",
    "weight_decay",
    "betas",
    "nesterov",
    "foreach",
    "fused",
    "batch_size",
    "shuffle",
    "sampler",
    "num_workers",
    "pin_memory",
    "drop_last",
    "collate_fn",
    "persistent_workers",
    "prefetch_factor",
    "num_replicas",
    "rank",
    "seed",
    "start_dim",
    "end_dim",
    "out",
    "map_location",
    "weights_only",
    "step_size",
    "gamma",
    "T_max",
    "eta_min",
    "milestones",
    "last_epoch",
}


def table_paths() -> list[Path]:
    """Oldest version first."""
    return sorted(SUPPORT_DIR.glob("*.json"), key=lambda p: [int(n) for n in p.stem.split(".")])


@cache
def table(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


@cache
def owned_by_unsupported_table() -> tuple[frozenset[str], tuple[str, ...]]:
    rows = json.loads(UNSUPPORTED_TABLE.read_text(encoding="utf-8"))["apis"]
    exact = frozenset(r["api"] for r in rows)
    return exact, tuple(r["api"] + "." for r in rows if r.get("match") == "prefix")


def plain_script_api(api: str) -> bool:
    return api in PLAIN_SCRIPT or api.startswith(PLAIN_SCRIPT_PREFIXES)


def language_problems(entry: dict[str, Any]) -> list[str]:
    """The tip must be English; the original, when kept, the Chinese wording it translates."""
    api, tip, original = entry["api"], entry["tip"], entry.get("tip_original")
    problems = []
    if CHINESE.search(tip):
        problems.append(f"{api}: tip is not in English: {tip!r}")
    if original is not None and (original == tip or not CHINESE.search(original)):
        problems.append(f"{api}: tip_original is not a Chinese original of the tip")
    return problems


def structure_problems(data: dict[str, Any], version: str) -> list[str]:
    """What is wrong with one table's structure (empty: nothing)."""
    problems: list[str] = []
    if set(data) != KEYS:
        problems.append(f"keys {sorted(data)} != {sorted(KEYS)}")
        return problems
    if data["document_version"] != version:
        problems.append(f"document_version {data['document_version']!r} != file name {version}")
    found = SOURCE.match(data["source"])
    if not found:
        problems.append(f"source does not name a document folder and commit: {data['source']!r}")
    elif ".".join(found.groups()) != version:
        problems.append(f"source is the list of another version: {data['source']!r}")
    if "scripts/build_operator_support.py" not in data["rebuild"]:
        problems.append("rebuild does not name scripts/build_operator_support.py")
    if not data["$comment"].strip():
        problems.append("empty $comment")
    apis = [e.get("api") for e in data["entries"]]
    if apis != sorted(set(apis), key=str):
        problems.append("apis are not sorted and unique")
    exact, prefixes = owned_by_unsupported_table()
    for entry in data["entries"]:
        api = entry.get("api", "?")
        if set(entry) - {"tip_original"} != ENTRY_KEYS:
            problems.append(f"{api}: keys {sorted(entry)}")
            continue
        problems.extend(language_problems(entry))
        if not API.match(api) or api.startswith(("torch.Tensor.", "torch.cuda.")):
            problems.append(f"{api}: not a module-level torch name")
        if api in exact or api.startswith(prefixes):
            problems.append(f"{api}: rules/unsupported_api.json reports it already")
        if entry["category"] not in CATEGORIES:
            problems.append(f"{api}: category {entry['category']!r}")
        if not isinstance(entry["tip"], str) or not entry["tip"].strip():
            problems.append(f"{api}: empty tip")
        elif entry["category"] == "unsupported_op" and not (
            entry["tip"].startswith("not supported on ")
            and f"torch_npu {version} native API list" in entry["tip"]
        ):
            problems.append(f"{api}: unsupported_op tip does not say where it is documented")
        elif entry["category"] == "restricted_op" and not entry["tip"].startswith(
            "restricted on the NPU: "
        ):
            problems.append(f"{api}: restricted_op tip does not quote the restriction")
        words = entry["keywords"]
        if not isinstance(words, list) or words != sorted(set(words)):
            problems.append(f"{api}: keywords are not a sorted list of unique names")
        elif any(not w.isidentifier() or keyword.iskeyword(w) for w in words):
            problems.append(f"{api}: keywords {words} are not Python identifiers")
        elif entry["category"] == "restricted_op" and not words:
            problems.append(f"{api}: restricted_op without keywords would never be reported")
        elif entry["category"] == "unsupported_op" and words:
            problems.append(f"{api}: unsupported_op with keywords")
        if not str(entry["document"]).endswith(".md"):
            problems.append(f"{api}: document {entry['document']!r}")
    return problems


def precision_problems(data: dict[str, Any]) -> list[str]:
    """Rows a plain training script would get (empty: none)."""
    problems: list[str] = []
    for entry in data["entries"]:
        api = entry["api"]
        if not plain_script_api(api):
            continue
        if entry["category"] == "unsupported_op":
            problems.append(f"{api}: unsupported_op, reported in every plain script")
        elif not entry["keywords"]:
            problems.append(f"{api}: restricted_op without keywords")
        elif set(entry["keywords"]) & PLAIN_ARGUMENTS:
            plain = sorted(set(entry["keywords"]) & PLAIN_ARGUMENTS)
            problems.append(f"{api}: restricted at {plain}, which plain scripts pass")
    return problems


def test_there_is_a_table_per_documented_version() -> None:
    versions = [p.stem for p in table_paths()]
    assert {"2.7.1", "2.13.0"} <= set(versions), versions
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", v) for v in versions)


@pytest.mark.parametrize("path", table_paths(), ids=lambda p: p.stem)
def test_structure(path: Path) -> None:
    assert structure_problems(table(path), path.stem) == []


@pytest.mark.parametrize("path", table_paths(), ids=lambda p: p.stem)
def test_the_file_is_what_the_script_writes(path: Path) -> None:
    """Deterministic layout: a rebuild changes a file only when the documents change."""
    text = path.read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), indent=1, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("path", table_paths(), ids=lambda p: p.stem)
def test_a_plain_training_script_gets_no_rows(path: Path) -> None:
    assert precision_problems(table(path)) == []


@pytest.mark.parametrize("path", table_paths(), ids=lambda p: p.stem)
def test_both_kinds_of_rows_are_there(path: Path) -> None:
    """A rebuild that lost a whole category (a parser broken by a layout change) shows here."""
    categories = {e["category"] for e in table(path)["entries"]}
    assert categories == CATEGORIES


def test_the_checks_catch_bogus_tables() -> None:
    path = table_paths()[-1]
    good = table(path)
    version = path.stem
    assert structure_problems(good, version) == [] and precision_problems(good) == []

    def with_entry(**entry: Any) -> dict[str, Any]:
        bad = copy.deepcopy(good)
        bad["entries"].append(entry)
        bad["entries"].sort(key=lambda e: e["api"])
        return bad

    tip = f"not supported on the NPU (torch_npu {version} native API list)"
    unsupported = with_entry(
        api="torch.nn.Linear", category="unsupported_op", tip=tip, keywords=[], document="x.md"
    )
    assert precision_problems(unsupported) == [
        "torch.nn.Linear: unsupported_op, reported in every plain script"
    ]
    workers = with_entry(
        api="torch.utils.data.DataLoader",
        category="restricted_op",
        tip="restricted on the NPU: `num_workers` supports only 0",
        keywords=["num_workers"],
        document="torch-utils-data.md",
    )
    assert precision_problems(workers) and structure_problems(workers, version) == []
    scheduler = with_entry(
        api="torch.optim.lr_scheduler.StepLR",
        category="restricted_op",
        tip="restricted on the NPU: x",
        keywords=[],
        document="torch-optim.md",
    )
    assert precision_problems(scheduler) and structure_problems(scheduler, version)
    bad_keyword = with_entry(
        api="torch.zzz",
        category="restricted_op",
        tip="restricted on the NPU: x",
        keywords=["not an identifier"],
        document="torch.md",
    )
    assert structure_problems(bad_keyword, version)
    unsorted = copy.deepcopy(good)
    unsorted["entries"].reverse()
    assert "apis are not sorted and unique" in structure_problems(unsorted, version)
    wrong_version = copy.deepcopy(good)
    wrong_version["document_version"] = "0.0.0"
    assert structure_problems(wrong_version, version)
    no_commit = copy.deepcopy(good)
    no_commit["source"] = "Ascend/pytorch somewhere"
    assert structure_problems(no_commit, version)
    owned = with_entry(
        api="torch.nn.DataParallel",
        category="unsupported_op",
        tip=tip,
        keywords=[],
        document="torch-nn.md",
    )
    assert structure_problems(owned, version) == [
        "torch.nn.DataParallel: rules/unsupported_api.json reports it already"
    ]
    chinese = with_entry(
        api="torch.zzz",
        category="restricted_op",
        tip="restricted on the NPU: 不支持`x`参数",
        keywords=["x"],
        document="torch.md",
    )
    assert "torch.zzz: tip is not in English: " in structure_problems(chinese, version)[0]
    kept = with_entry(
        api="torch.zzz",
        category="restricted_op",
        tip="restricted on the NPU: x",
        tip_original="restricted on the NPU: x",
        keywords=["x"],
        document="torch.md",
    )
    assert "tip_original is not a Chinese original" in structure_problems(kept, version)[0]


def test_every_chinese_restriction_is_translated_and_kept() -> None:
    """The tables hold English tips, and each translated one keeps the list's wording."""
    originals = [e for path in table_paths() for e in table(path)["entries"] if "tip_original" in e]
    assert len(originals) >= 8 and all(CHINESE.search(e["tip_original"]) for e in originals)
    assert not [
        e["tip"]
        for path in table_paths()
        for e in table(path)["entries"]
        if CHINESE.search(e["tip"])
    ]
