"""Rebuild ``rules/operator_support/<X.Y.Z>.json`` from torch_npu's public API support lists.

Usage::

    git clone --mirror https://github.com/Ascend/pytorch ascend-pytorch.git   # or any clone
    python scripts/build_operator_support.py ascend-pytorch.git [--check] [--summary]

Needs git and the torch the project's tests pin (names are checked against it, see below).

Sources. The lists are Ascend/pytorch's "PyTorch native API support" documents, one folder per
PyTorch version, ``docs/zh/api/native_api/pytorch_X-Y-Z/`` (formerly
``docs/zh/native_apis/pytorch_X-Y-Z/``), one markdown file per torch module. They are read with
git from the repository given (a bare mirror is enough; nothing is checked out):

* a version the ``master`` branch documents is read at the last commit of ``master`` that
  changed its folder;
* a version ``master`` no longer documents (2.6.0, 2.8.0, 2.9.0, 2.10.0 so far) is read at the
  newest commit of any branch or tag that added or modified a file of its folder (pull-request
  refs are not branches and are ignored).

Files whose git objects cannot be read are skipped with a warning. Two layouts are parsed:
``### torch.xxx`` headings, each followed by a product table (``| <term>Atlas A2 训练系列产品
</term> | ✔ |``) and optionally ``**限制与说明**：<restriction>``; and the older one-table layout
(``|API名称|是否支持|限制与说明|`` with 是/否, products sometimes broken down in the cell).
Sub-headings ``> <font>method()</font>`` under a class are members of that class: never listed.

Classification (precision over recall: every row the tool prints must be real work):

``unsupported_op``
    ✘ on every listed product, or ✘ on both Atlas A2 and Atlas A3 training products (the
    mainstream training parts; the tip then names the products it runs on). Reported at every
    use. APIs ✘ on some products only (other than both A2 and A3) are left out.
``restricted_op``
    ✔ on A2 and A3, with a restriction clause that, on its own and without a condition
    (当/时/若/如果/情况下/场景下/针对/模式下, or a product name), is one of:

    * ``不支持`p`(参数)`` -- the argument ``p`` is not supported;
    * ``不支持`p=v`(场景)`` -- where ``v`` is not ``p``'s default;
    * ``(仅|只)支持`p` = v`` / ```p`(参数|的值)(在NPU上)仅支持(设置为)v1或v2...`` -- where the
      values are literals (numbers, tuples, True/False/None, words) and ``p``'s default is among
      them, so passing ``p`` explicitly almost always means an unsupported value (a restriction
      whose only supported value is NOT the default, such as ``approximate`` of gelu, contradicts
      the default and is left out).

    ``p`` must be a parameter of the API in the installed torch (``inspect.signature``, completed
    from the signature lines of the docstring and, for a class forwarding ``**kwargs``, from its
    bases). These parameters are the entry's ``keywords``: the tool reports a call only when it
    passes one of them as a keyword argument. The tip quotes the whole restriction text.

The lists are in Chinese; the tool shows English. Each entry's ``tip`` is in English, the
restriction translated through ``scripts/operator_support_en.json`` (keyed by the restriction
text as extracted, product names through its ``terms``), and ``tip_original`` keeps the tip as
the list words it, when that differs. A restriction with Chinese text the table lacks is
printed and the script exits 1 (add its English to the table, then rerun).
Left out (no entry)
    * restrictions that only list dtypes (```input`仅支持fp16，fp32``, ``不支持double``): the
      argument is a tensor whose dtype is not known statically, and those listing fp32 are
      harmless for a plain script anyway;
    * restrictions about products, shapes, ranks, value ranges, precision, performance, CPU
      fallback or extra settings; restrictions naming an argument under a condition, or an
      identifier that is not a parameter of the API;
    * APIs without a support table (some classes have one for their members only);
    * APIs whose occurrences in the list disagree, and an ``nn`` module class / ``nn.functional``
      function marked unsupported while its twin (``torch.nn.MaxPool1d`` and
      ``torch.nn.functional.max_pool1d``: same name but for case and underscores) is supported
      by the same list -- one wraps the other, the list contradicts itself;
    * an API marked unsupported by one version's list but running according to the list of a
      newer version: the lists of all versions are maintained together, for one torch_npu
      release train, and support does not go away, so the older mark is more likely unverified
      than true (the 2.6.0 list marks ``torch.nn.MaxPool2d``, ``torch.nn.MultiheadAttention``
      and ``torch.nn.utils.clip_grad_norm_`` unsupported; the 2.7.1 one supports them, and
      torch_npu's v2.6.0 branch tests them on the NPU);
    * the rows of ``ERRATA`` below, checked by hand;
    * the APIs of ``HOST_ONLY`` below, in every version: they launch no device kernel (a flag
      getter, Dynamo's decorators and caches), so whatever the list marks, the NPU runs them.

Only module-level names are listed (``torch.X``, ``torch.nn.X``, ``torch.nn.functional.X``,
``torch.optim.X``, ``torch.utils.data.X``, ``torch.distributed.X`` ...): the name must resolve in
the installed torch as it does in user code (attributes from ``torch`` down, imported, never
called) and its parent must be a module. Left out and counted in ``--summary``:
``torch.Tensor`` methods and storages (a receiver's type is not known statically), class members,
modules themselves, names that do not resolve (renamed, removed, or needing an optional package
such as tensorboard), the CUDA namespace (``torch.cuda.*`` is migrated to ``torch.npu.*``, which
``rules/torch_npu_names`` checks; ``torch.backends.cuda/cudnn`` are backend switches) and APIs
``rules/unsupported_api.json`` reports already (``torch.nn.DataParallel``,
``torch.utils.cpp_extension.load`` ...: one row per use, from that table).

Output: one ``<X.Y.Z>.json`` per documented version, deterministic (entries sorted by api,
``json.dumps(indent=1, ensure_ascii=False)`` plus a newline); ``--check`` writes nothing and
exits 1 when a file would change; ``--summary`` prints, per version, the counts per outcome and
the notes, then the restriction clauses seen per class with examples, for reviewing the
classification.
"""

from __future__ import annotations

import argparse
import html
import importlib
import inspect
import io
import json
import re
import subprocess
import sys
import types
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "rules" / "operator_support"
# The tool's own table of CUDA-only APIs: what it lists is reported there, not here.
UNSUPPORTED_TABLE = ROOT / "rules" / "unsupported_api.json"
# English for the lists' Chinese restriction texts and product names (see the docstring).
TRANSLATIONS = Path(__file__).resolve().parent / "operator_support_en.json"
CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]")
REPO = "Ascend/pytorch"
DOC_FOLDERS = ("docs/zh/api/native_api", "docs/zh/native_apis")  # newest layout first
VERSION_DIR = re.compile(r"^pytorch_(\d+)-(\d+)-(\d+)$")
MAIN_BRANCHES = ("refs/heads/master", "refs/remotes/origin/master")
A2, A3 = "Atlas A2 训练系列产品", "Atlas A3 训练系列产品"

# Rows of a list taken as documentation errors, checked by hand: (version, api) -> why. The
# plain-script check of tests/test_operator_support_tables.py is what finds candidates. (The one
# found so far, torch.nn.MaxPool2d in the 2.6.0 list, is covered by the newer-list rule.)
ERRATA: dict[tuple[str, str], str] = {}

# APIs a list marks unsupported that launch no device kernel whatever the device: they read or
# set host state of torch itself (the Python source of torch, version the tests pin, shows it),
# so a migrated script runs them unchanged. api -> what it does instead.
HOST_ONLY: dict[str, str] = {
    "torch.is_deterministic_algorithms_warn_only_enabled": (
        "returns a global flag (torch/__init__.py: _C._get_deterministic_algorithms_warn_only())"
    ),
    "torch.compiler.disable": (
        "a decorator telling Dynamo not to trace a function (torch/compiler/__init__.py: "
        "torch._dynamo.disable)"
    ),
    "torch.compiler.allow_in_graph": (
        "marks a function for Dynamo's graph (torch/compiler/__init__.py: "
        "torch._dynamo.allow_in_graph)"
    ),
    "torch.compiler.list_backends": (
        "lists the names torch.compile accepts (torch/compiler/__init__.py: "
        "torch._dynamo.list_backends)"
    ),
    "torch.compiler.reset": (
        "clears Dynamo's in-process caches (torch/compiler/__init__.py: torch._dynamo.reset)"
    ),
}

# Documents listing receivers' methods and storages, never module-level functions.
RECEIVER_DOCUMENTS = ("torch-Tensor.md", "torch-Storage.md", "Named-Tensors.md")

COMMENT = (
    "What torch_npu {version}'s public 'PyTorch native API support' list (Ascend/pytorch, see "
    "source) says about module-level PyTorch APIs, reduced by scripts/build_operator_support.py "
    "to what a migration must act on (its docstring has the rules); rerun that script (see "
    "rebuild) instead of editing. Used by ms_fmk_transplt -v/--target-version "
    "(engine/rules/operator_support/): the file of the target version, else of the nearest "
    "older documented one. unsupported_op: marked unsupported on every listed product, or on both "
    "Atlas A2 and A3 training products; reported at every use. restricted_op: supported, but a "
    "restriction is about an argument the NPU does not support (not at all, or only with its "
    "default value); reported only at calls passing one of keywords as a keyword argument. "
    "Left out: restrictions that only list dtypes, or concern products, shapes, value ranges, "
    "precision, performance or CPU fallback, or name an argument only under a condition; "
    "contradictions within the list; torch.Tensor methods, storages and class members (a "
    "receiver's type is not known statically); the CUDA namespace and what "
    "rules/unsupported_api.json reports; names that do not resolve in torch {torch}. tip is in "
    "English (the list's Chinese restriction translated through "
    "scripts/operator_support_en.json); tip_original, where present, is the list's wording."
)

DTYPE_WORDS = (
    "bf16|fp16|fp32|fp64|fp8|hf32|hifloat8|uint8|uint16|uint32|uint64|int4|int8|int16|int32|"
    "int64|bool|complex32|complex64|complex128|double|float|float16|float32|float64|bfloat16|half"
)
DTYPE = re.compile(rf"(?<![A-Za-z0-9])(?:{DTYPE_WORDS})(?![A-Za-z0-9])", re.IGNORECASE)
FP32 = re.compile(r"(?<![A-Za-z0-9])(?:fp32|float32|float)(?![A-Za-z0-9])", re.IGNORECASE)
# What may surround a dtype list in a dtype-only clause.
DTYPE_FILLER = re.compile(
    r"入参|属性|参数|输入|输出|仅|只|暂|不|支持|数据类型|类型|以及|及|和|与|"
    r"或|为|的|[，,、；;：:。.\s\-]"
)
CONDITION = re.compile(
    r"当(?!前)|时[，,。]|时$|若|如果|情况下|场景下|针对|模式下|<term>|Atlas|Ascend"
)
PRODUCT = re.compile(r"<term>|Atlas|Ascend|产品")
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
NOT_PARAM = re.compile(rf"^(?:当前)?(?:暂)?不支持(?:设置)?(?P<p>{IDENT})(?:参数)?$")
NOT_VALUE = re.compile(
    rf"^(?:当前)?(?:暂)?不支持(?P<p>{IDENT})\s*=\s*(?P<v>[^\s，,。]+?)(?:的)?(?:场景)?$"
)
ONLY_VALUE = re.compile(
    rf"^(?:当前)?(?P<p>{IDENT})(?:参数|的值)?(?:目前)?(?:在NPU上)?(?:仅|只)支持(?:设置为)?"
    r"(?P<v>[^：:]+?)$"
)
ONLY_EQUALS = re.compile(
    rf"^(?:仅|只)支持(?P<p>{IDENT})\s*=\s*(?P<v>[^，,。：:]+?)(?:[，,]例如[：:]?)?$"
)
NUMBER = r"-?\d+(?:\.\d+)?"
LITERAL = re.compile(
    rf"^(?:True|False|None|{NUMBER}|\(\s*{NUMBER}(?:\s*,\s*{NUMBER})*\s*,?\s*\)|{IDENT})$"
)


def git(mirror: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(mirror), *args], capture_output=True, check=True, encoding="utf-8"
    )
    return done.stdout


def try_git(mirror: Path, *args: str) -> str | None:
    try:
        return git(mirror, *args)
    except subprocess.CalledProcessError:
        return None


# -- where each version's list is ---------------------------------------------------------


@dataclass(frozen=True)
class Source:
    version: str  # X.Y.Z
    commit: str
    date: str  # YYYY-MM-DD
    folder: str  # docs/.../pytorch_X-Y-Z

    def describe(self) -> str:
        return f"{REPO} {self.folder} at commit {self.commit} ({self.date})"


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def version_folders(mirror: Path, ref: str) -> dict[str, str]:
    """``{X.Y.Z: folder}`` the tree of ``ref`` documents (the newest layout wins)."""
    out: dict[str, str] = {}
    for parent in reversed(DOC_FOLDERS):
        listing = try_git(mirror, "ls-tree", "--name-only", ref, f"{parent}/") or ""
        for path in listing.splitlines():
            m = VERSION_DIR.match(path.rsplit("/", 1)[-1])
            if m:
                out[".".join(m.groups())] = path
    return out


def discover(mirror: Path) -> tuple[list[Source], list[str]]:
    """The source of every documented version, and notes on what could not be read."""
    notes: list[str] = []
    refs = git(
        mirror, "for-each-ref", "--format=%(refname)", "refs/heads", "refs/tags", "refs/remotes"
    )
    names = sorted({r for r in refs.split() if not r.endswith("/HEAD")})
    main = next((r for r in MAIN_BRANCHES if r in names), None)
    on_main = version_folders(mirror, main) if main else {}
    versions: set[str] = set(on_main)
    for ref in names:
        versions.update(version_folders(mirror, ref))
    sources = []
    for version in sorted(versions, key=version_key):
        dashed = "pytorch_" + version.replace(".", "-")
        paths = [f"{parent}/{dashed}" for parent in DOC_FOLDERS]
        if main and version in on_main:
            where = [main]
        else:  # every branch and tag; pull-request refs are not under these
            where = ["--branches", "--tags", "--remotes", "--diff-filter=AMR"]
        log = try_git(mirror, "log", "-1", "--format=%H %cs", *where, "--", *paths)
        if not log:
            notes.append(f"{version}: no readable commit changes {dashed}; skipped")
            continue
        commit, date = log.split()
        folder = version_folders(mirror, commit).get(version)
        if folder is None:
            notes.append(f"{version}: {dashed} is not in commit {commit}; skipped")
            continue
        sources.append(Source(version, commit, date, folder))
    return sources, notes


def read_documents(mirror: Path, source: Source) -> tuple[dict[str, str], list[str]]:
    listing = git(mirror, "ls-tree", "--name-only", source.commit, f"{source.folder}/")
    documents: dict[str, str] = {}
    missing: list[str] = []
    for path in sorted(listing.splitlines()):
        if not path.endswith(".md"):
            continue
        text = try_git(mirror, "cat-file", "blob", f"{source.commit}:{path}")
        if text is None:
            missing.append(path)
        else:
            documents[path.rsplit("/", 1)[-1]] = text
    return documents, missing


# -- the documents ------------------------------------------------------------------------


@dataclass
class DocApi:
    """One API as a document lists it."""

    api: str
    document: str
    support: dict[str, bool] = field(default_factory=dict)  # product -> runs; {} = no table
    restriction: list[str] = field(default_factory=list)  # markdown lines
    linked: str = ""  # the name of its **原生文档** link, when there is one

    @property
    def restriction_text(self) -> str:
        return "\n".join(self.restriction).strip()


HEADING = re.compile(r"^###\s+(.*?)\s*$")
MEMBER = re.compile(r"^>\s*<font[^>]*>.*</font>\s*$")
PRODUCT_ROW = re.compile(r"^\|\s*<term>(.*?)</term>\s*\|\s*([✔✘])\s*\|\s*$")
RESTRICTION = re.compile(r"^\*\*限制与说明\*\*\s*[：:]\s*(.*)$")
LINK = re.compile(r"^\*\*原生文档\*\*\s*[：:]\s*\[([^\]]*)\]")
API_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


def api_name(raw: str) -> str:
    text = re.sub(r"<[^>]+>", " ", raw).replace("\\", "")
    text = re.sub(r"^\s*class\s+", "", text.strip())
    m = API_NAME.search(text)
    return m.group(0).rstrip(".") if m else ""


def parse_headings(text: str, document: str) -> list[DocApi]:
    apis: list[DocApi] = []
    current: DocApi | None = None
    member = restriction = fence = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = not fence
        if fence or stripped.startswith("```"):
            if current is not None and restriction and not member:
                current.restriction.append(line)
            continue
        heading = HEADING.match(line)
        if heading or line.startswith(("# ", "## ")):
            current, member, restriction = None, False, False
            if heading:
                current = DocApi(api_name(heading.group(1)), document)
                apis.append(current)
            continue
        if current is None or member:
            continue
        if MEMBER.match(line):
            member, restriction = True, False
        elif stripped == "</div>":
            restriction = False
        elif (row := PRODUCT_ROW.match(line)) and not restriction:
            current.support[row.group(1).strip()] = row.group(2) == "✔"
        elif found := RESTRICTION.match(line):
            restriction = True
            current.restriction.append(found.group(1))
        elif link := LINK.match(line):
            current.linked = api_name(link.group(1))
        elif restriction:
            current.restriction.append(line)
    return apis


TABLE_PRODUCT = re.compile(r"<term>(.*?)</term>\s*[：:]\s*(是|否)")


def parse_tables(text: str, document: str) -> list[DocApi]:
    """The older layout: ``|API名称|(NPU形式名称|)是否支持|限制与说明|`` rows."""
    apis: list[DocApi] = []
    columns: list[str] = []
    for line in text.splitlines():
        if not line.startswith("|"):
            columns = [] if not line.strip() else columns
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if "API名称" in cells[0]:
            columns = cells
            continue
        if not columns or all(set(c) <= set("-: ") for c in cells) or len(cells) != len(columns):
            continue
        row = dict(zip(columns, cells))
        api = DocApi(api_name(row["API名称"].split("<br>")[0]), document)
        supported = row.get("是否支持", "")
        if supported in ("是", "否"):
            api.support = {"": supported == "是"}  # every listed product
        else:
            api.support = {p.strip(): v == "是" for p, v in TABLE_PRODUCT.findall(supported)}
        note = row.get("限制与说明", "-")
        if note not in ("", "-", "--"):
            # One list item per <br>-separated part, as in the heading layout.
            parts = note.split("<br>")
            api.restriction = [p if p.lstrip().startswith("-") else f"- {p}" for p in parts]
        apis.append(api)
    return apis


def parse_document(text: str, document: str) -> list[DocApi]:
    if "|API名称|" in text.replace(" ", ""):
        return parse_tables(text, document)
    return parse_headings(text, document)


# -- restriction clauses ------------------------------------------------------------------


def clauses(lines: Iterable[str]) -> list[str]:
    """One clause per list item / line / ；, without code blocks, markup or list markers."""
    out: list[str] = []
    fence = False
    for line in lines:
        if line.strip().startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        line = html.unescape(line)  # "&#8226;" must not split a clause
        # The older layout sometimes glues a dtype list to the next sentence.
        line = re.sub(rf"((?:{DTYPE_WORDS}))(?=不支持|仅支持|只支持|可能)", r"\1\n", line)
        for part in re.split(r"\n|；|;", line):
            part = re.sub(r"^\s*(?:[-*]|\d+\.)\s+", "", part).strip()
            part = re.sub(r"\*\*", "", part).strip()
            if part:
                out.append(part)
    return out


def plain(clause: str) -> str:
    """A clause with backticks and quotes dropped, for matching."""
    text = re.sub(r"[`\"“”'‘’]", "", clause)
    return re.sub(r"\s+", " ", text).strip(" 。.")


def is_dtype_clause(clause: str) -> bool:
    """Only dtypes: ```input`仅支持fp16，fp32``, ``不支持double数据类型``."""
    text = plain(re.sub(r"<[^>]+>", "", clause))
    if not DTYPE.search(text) or "支持" not in text:
        return False
    text = re.sub(rf"^(?:入参|属性)?{IDENT}(?=\s*(?:仅|只|不|支持))", "", text)
    return DTYPE_FILLER.sub("", DTYPE.sub("", text)) == ""


def dtype_allows_fp32(clause: str) -> bool:
    text = plain(clause)
    positive = text.split("不支持")[0]
    if "支持" in positive:  # "仅支持fp16，fp32" / "支持fp32，fp64"
        return bool(FP32.search(positive))
    return not FP32.search(text)  # "不支持double": everything else, fp32 included


@dataclass(frozen=True)
class Verdict:
    kind: str  # a CLAUSE_CLASSES key
    keyword: str = ""


CLAUSE_CLASSES = {
    "argument": "names an argument the NPU does not support (kept: restricted_op keyword)",
    "argument_rejected": "names an argument, but conditionally, with a supported value that is "
    "not the default, or not a parameter of the API (left out)",
    "dtype_fp32": "only lists dtypes, fp32 among the supported ones (left out)",
    "dtype_no_fp32": "only lists dtypes, fp32 not among them (left out: the tensor's dtype is "
    "not known statically)",
    "product": "about products / hardware (left out)",
    "other": "shapes, ranks, value ranges, precision, performance, CPU fallback, settings "
    "(left out)",
}


def literal_values(text: str) -> list[str] | None:
    values = []
    for token in re.split(r"或|、|，|和|\s+or\s+", text):
        token = token.strip(" `\"'“”")
        if not LITERAL.match(token):
            return None
        values.append(re.sub(r"\s+", "", token))
    return values or None


def classify_clause(clause: str, params: dict[str, str | None] | None) -> Verdict:
    text = plain(clause)
    if is_dtype_clause(clause):
        if PRODUCT.search(clause):
            return Verdict("product")
        return Verdict("dtype_fp32" if dtype_allows_fp32(clause) else "dtype_no_fp32")
    names_argument = (
        "`" in clause  # the current layout marks arguments with backticks, the older one not
        or re.search(IDENT + r"\s*(?:=|参数)", text)
        or any(word in (params or {}) for word in re.findall(IDENT, text))
    )
    restricts = re.search(r"不支持|仅支持|只支持", text)
    if not (names_argument and restricts):
        return Verdict("product" if PRODUCT.search(clause) else "other")
    if CONDITION.search(clause):
        return Verdict("argument_rejected")
    for pattern, rule in (
        (NOT_PARAM, "any"),
        (NOT_VALUE, "not_default"),
        (ONLY_EQUALS, "default_only"),
        (ONLY_VALUE, "default_only"),
    ):
        m = pattern.match(text)
        if m is None:
            continue
        name = m.group("p")
        if params is None or name not in params:
            return Verdict("argument_rejected")
        default = params[name]
        if rule == "any":
            return Verdict("argument", name)
        values = literal_values(m.group("v"))
        if values is None or default is None:
            return Verdict("argument_rejected")
        if rule == "not_default" and default not in values:
            return Verdict("argument", name)
        if rule == "default_only" and default in values:
            return Verdict("argument", name)
        return Verdict("argument_rejected")
    return Verdict("argument_rejected" if re.search(IDENT, text) else "other")


def tip_text(lines: Sequence[str]) -> str:
    """The restriction as one line: list items joined by "; ", markup dropped, a code example
    kept as one backticked line of ``;``-separated statements."""
    items: list[str] = []
    code: list[str] | None = None
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("```"):
            if code is None:
                code = []
                continue
            if code:
                text = "`" + "; ".join(code) + "`"
                items[-1:] = [items[-1] + " " + text] if items else [text]
            code = None
            continue
        if code is not None:
            if stripped:
                code.append(stripped)
            continue
        if not stripped:
            continue
        item = re.match(r"^(?:[-*]|\d+\.)\s+(.*)$", stripped)
        text = item.group(1) if item else stripped
        text = re.sub(r"<sup>(.*?)</sup>", r"^\1", text)
        text = re.sub(r"<br\s*/?>", "; ", text)
        text = re.sub(r"<[^>]+>", "", text)
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
        text = html.unescape(text.replace("\\*", "*").replace("\\_", "_").replace("**", ""))
        if item or not items:
            items.append(text.strip())
        else:
            items[-1] += " " + text.strip()
    return "; ".join(i for i in items if i)


# -- torch --------------------------------------------------------------------------------


class TorchNames:
    """Resolution of documented names in the installed torch (imported, never called)."""

    def __init__(self) -> None:
        with quiet():  # torch warns when numpy is missing: irrelevant here
            import torch

        self.version = torch.__version__.split("+")[0]
        self._cache: dict[str, tuple[str, Any]] = {}

    def resolve(self, name: str) -> tuple[str, Any]:
        """(status, object): status is module_level, member (of a class), module, unresolved,
        or "needs <package>" (importing it needs an optional package that is not installed)."""
        if name not in self._cache:
            with quiet():
                self._cache[name] = self._resolve(name)
        return self._cache[name]

    def _resolve(self, name: str) -> tuple[str, Any]:
        """As ``torch.a.b.c`` in user code: attributes from ``torch`` down, a submodule imported
        only where the attribute is missing (so ``torch.nn.utils.spectral_norm`` is the
        function ``torch.nn.utils`` binds, not the submodule of that name)."""
        parts = name.split(".")
        obj: Any = None
        parent: Any = None
        for i, part in enumerate(parts):
            parent = obj
            try:
                if i and hasattr(obj, part):
                    obj = getattr(obj, part)
                else:
                    obj = importlib.import_module(".".join(parts[: i + 1]))
            except Exception as error:  # noqa: BLE001 - any failure means "cannot check"
                missing = getattr(error, "name", None)
                if isinstance(error, ImportError) and missing and missing.split(".")[0] != "torch":
                    return f"needs {missing.split('.')[0]}", None
                return "unresolved", None
        if parent is None or isinstance(obj, types.ModuleType):
            return "module", obj
        if not isinstance(parent, types.ModuleType):
            return "member", obj
        return "module_level", obj


@contextmanager
def quiet() -> Iterator[None]:
    """Importing parts of torch warns and prints; none of it matters here."""
    with warnings.catch_warnings(), redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


def parameters(obj: Any, leaf: str) -> dict[str, str | None] | None:
    """``{parameter: default as text, None when it has none}``; None when unknown. A signature
    that forwards ``*args, **kwargs`` (``nn.LSTM``, ``F.max_pool2d``) is completed from the
    docstring's signature lines and, for a class, from its bases' ``__init__``."""
    out: dict[str, str | None] = {}
    forwards = signature_parameters(obj, out)
    if forwards is None or forwards:
        for name, default in (docstring_parameters(obj, leaf) or {}).items():
            out.setdefault(name, default)
        if isinstance(obj, type):
            for base in obj.__mro__[1:]:
                if base is object or signature_parameters(base.__init__, out) is False:
                    break
    out.pop("self", None)
    return out or None


def signature_parameters(obj: Any, out: dict[str, str | None]) -> bool | None:
    """Add ``obj``'s named parameters to ``out``; whether it takes ``**kwargs`` (None: no
    signature)."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    forwards = False
    for p in signature.parameters.values():
        if p.kind is p.VAR_KEYWORD:
            forwards = True
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
            continue
        out.setdefault(p.name, None if p.default is p.empty else default_text(p.default))
    return forwards


def default_text(value: Any) -> str:
    return re.sub(r"\s+", "", str(value))


def docstring_parameters(obj: Any, leaf: str) -> dict[str, str | None] | None:
    """A builtin's parameters from its docstring's signature lines (``sum(input, *, dtype=None)``
    and ``.. function:: sum(input, dim, keepdim=False, *, dtype=None)``)."""
    doc = getattr(obj, "__doc__", None) or ""
    out: dict[str, str | None] = {}
    line = re.compile(rf"^\s*(?:\.\. function:: )?{re.escape(leaf)}\((.*)\)\s*(?:->.*)?$", re.M)
    for found in line.finditer(doc):
        depth, start, parts = 0, 0, []
        body = found.group(1)
        for i, ch in enumerate(body):
            depth += ch in "([{"
            depth -= ch in ")]}"
            if ch == "," and depth == 0:
                parts.append(body[start:i])
                start = i + 1
        parts.append(body[start:])
        for part in parts:
            m = re.match(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=]*)?(?:=\s*(.+?))?\s*$", part)
            if m and m.group(1) not in ("self",):
                default = m.group(2)
                out.setdefault(m.group(1), None if default is None else default.strip("'\" "))
    return out or None


# -- one version --------------------------------------------------------------------------


@dataclass
class Outcome:
    api: str
    document: str
    status: str  # entry, or why it is left out
    category: str = ""
    tip: str = ""  # in English
    keywords: tuple[str, ...] = ()
    clause_kinds: tuple[tuple[str, str], ...] = ()  # (kind, clause) of its restriction


@dataclass
class Build:
    source: Source
    torch_version: str
    entries: dict[str, Outcome] = field(default_factory=dict)
    outcomes: list[Outcome] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    listed: dict[str, DocApi] = field(default_factory=dict)  # every API of the list, by name

    def table(self) -> dict[str, Any]:
        version = self.source.version
        return {
            "$comment": COMMENT.format(version=version, torch=self.torch_version),
            "source": self.source.describe(),
            "document_version": version,
            "rebuild": "python scripts/build_operator_support.py <path to a clone or mirror of "
            "Ascend/pytorch>",
            "entries": [
                {
                    "api": e.api,
                    "category": e.category,
                    "tip": english(e.tip),
                    **({"tip_original": e.tip} if english(e.tip) != e.tip else {}),
                    "keywords": list(e.keywords),
                    "document": e.document,
                }
                for e in sorted(self.entries.values(), key=lambda e: e.api)
            ],
        }


@lru_cache(maxsize=1)
def translations() -> tuple[dict[str, str], dict[str, str]]:
    """(restriction text -> English, Chinese term -> English) of ``TRANSLATIONS``."""
    raw = json.loads(TRANSLATIONS.read_text(encoding="utf-8"))
    return raw["restrictions"], raw["terms"]


UNTRANSLATED: set[str] = set()  # what english() could not translate, for main() to report


def english(tip: str) -> str:
    """``tip`` in English: its restriction (the text after ``restricted on the NPU: `` or
    ``; restriction: ``) from the table, then the terms (product names); what keeps Chinese
    text is added to ``UNTRANSLATED``."""
    if not CJK.search(tip):
        return tip
    restrictions, terms = translations()
    for marker in ("; restriction: ", "restricted on the NPU: "):
        head, found, restriction = tip.partition(marker)
        if found and restriction in restrictions:
            tip = head + found + restrictions[restriction]
            break
    for term, meaning in terms.items():
        tip = tip.replace(term, meaning)
    if CJK.search(tip):
        UNTRANSLATED.add(tip)
    return tip


@lru_cache(maxsize=1)
def unsupported_table_apis() -> tuple[frozenset[str], tuple[str, ...]]:
    """(exact names, prefixes) of rules/unsupported_api.json's ``apis``."""
    if not UNSUPPORTED_TABLE.is_file():
        return frozenset(), ()
    rows = json.loads(UNSUPPORTED_TABLE.read_text(encoding="utf-8")).get("apis", [])
    exact = frozenset(r["api"] for r in rows)
    prefixes = tuple(sorted(r["api"] + "." for r in rows if r.get("match") == "prefix"))
    return exact, prefixes


def owned_elsewhere(name: str) -> bool:
    exact, prefixes = unsupported_table_apis()
    return name in exact or name.startswith(prefixes)


def leave_out(api: DocApi) -> str:
    """Why an API gets no entry whatever the list says, or "" when it may get one."""
    name = api.api
    if name.startswith("Tensor."):
        return "Tensor method or storage"
    if not re.fullmatch(r"torch(?:\.[A-Za-z0-9_]+)+", name):
        return "not a torch.* name"
    if api.document in RECEIVER_DOCUMENTS or name.startswith(("torch.Tensor.", "torch.Storage")):
        return "Tensor method or storage"
    if re.fullmatch(r"torch\.[A-Za-z0-9_]*Storage(?:\..*)?", name):
        return "Tensor method or storage"
    if re.match(r"torch\.(?:cuda|backends\.cuda|backends\.cudnn)(?:\.|$)", name):
        return "CUDA namespace (migrated, or reported by rules/unsupported_api.json)"
    if owned_elsewhere(name):
        return "reported by rules/unsupported_api.json"
    if name in HOST_ONLY:
        return f"runs no device kernel: {HOST_ONLY[name]}"
    return ""


NOT_LISTED = {
    "unresolved": "does not resolve in torch",
    "member": "class member",
    "module": "a module",
}


def judge(api: DocApi, version: str, torch_names: TorchNames) -> Outcome:
    why = leave_out(api)
    if why:
        return Outcome(api.api, api.document, why)
    if not api.support:
        return Outcome(api.api, api.document, "no support table")
    text = api.restriction_text
    restriction = tip_text(api.restriction) if text else ""
    runs = [p for p, ok in api.support.items() if ok]
    fails = [p for p, ok in api.support.items() if not ok]
    where = f"torch_npu {version} native API list"
    outcome: Outcome | None = None
    if not runs:
        tip = f"not supported on the NPU ({where})"
        if restriction:
            tip += f"; restriction: {restriction}"
        outcome = Outcome(api.api, api.document, "entry", "unsupported_op", tip)
    elif A2 in fails and A3 in fails:
        tip = f"not supported on {A2} / {A3} ({where}; supported on: {', '.join(sorted(runs))})"
        if restriction:
            tip += f"; restriction: {restriction}"
        outcome = Outcome(api.api, api.document, "entry", "unsupported_op", tip)
    status, obj = torch_names.resolve(api.api)
    if status != "module_level":
        why = NOT_LISTED.get(status, f"does not resolve in torch ({status})")
        return Outcome(api.api, api.document, why + (" [an entry dropped]" if outcome else ""))
    if outcome is not None:
        return outcome
    if fails and (A2 not in runs or A3 not in runs or "" in fails):
        return Outcome(api.api, api.document, "unsupported on some products only")
    if not text:
        return Outcome(api.api, api.document, "supported, no restriction")
    with quiet():
        params = parameters(obj, api.api.rsplit(".", 1)[-1])
    kinds = []
    keywords: list[str] = []
    for clause in clauses(api.restriction):
        verdict = classify_clause(clause, params)
        kinds.append((verdict.kind, clause))
        if verdict.keyword and verdict.keyword not in keywords:
            keywords.append(verdict.keyword)
    if not keywords:
        return Outcome(api.api, api.document, "restriction left out", clause_kinds=tuple(kinds))
    return Outcome(
        api.api,
        api.document,
        "entry",
        "restricted_op",
        f"restricted on the NPU: {restriction}",
        tuple(sorted(keywords)),
        tuple(kinds),
    )


def runs_on_mainstream(api: DocApi) -> bool:
    """Listed as running on the training products that matter (A2 and A3, or all)."""
    if not api.support or not any(api.support.values()):
        return False
    return not (api.support.get(A2) is False and api.support.get(A3) is False)


def twin(name: str, listed: dict[str, DocApi]) -> str | None:
    """The other half of an ``nn`` module / ``nn.functional`` pair (``torch.nn.MaxPool2d`` and
    ``torch.nn.functional.max_pool2d``), when the same list has it."""
    module, _, leaf = name.rpartition(".")
    key = leaf.lower().replace("_", "")
    other = {"torch.nn": "torch.nn.functional", "torch.nn.functional": "torch.nn"}.get(module)
    if other is None:
        return None
    for candidate in listed:
        prefix, _, cleaf = candidate.rpartition(".")
        if prefix == other and cleaf.lower().replace("_", "") == key and cleaf != leaf:
            return candidate
    return None


def build(mirror: Path, source: Source, torch_names: TorchNames) -> Build:
    documents, missing = read_documents(mirror, source)
    result = Build(source, torch_names.version)
    result.notes.extend(f"unreadable (missing git object), skipped: {p}" for p in missing)
    apis = [a for name, text in documents.items() for a in parse_document(text, name)]
    listed = result.listed = {a.api: a for a in apis}
    result.notes.extend(
        f"{a.document}: heading {a.api} links to the PyTorch page of {a.linked}"
        for a in apis
        if a.linked and a.linked != a.api
    )
    by_api: dict[str, list[Outcome]] = defaultdict(list)
    for api in apis:
        outcome = judge(api, source.version, torch_names)
        result.outcomes.append(outcome)
        if outcome.status == "entry":
            by_api[api.api].append(outcome)
    verdicts: dict[str, set[str]] = defaultdict(set)
    for outcome in result.outcomes:
        verdicts[outcome.api].add(outcome.category or outcome.status)
    for name, found in sorted(by_api.items()):
        if len(verdicts[name]) > 1:
            result.notes.append(
                f"{name}: occurrences disagree ({sorted(verdicts[name])}); left out"
            )
            continue
        first = found[0]
        erratum = ERRATA.get((source.version, name))
        if erratum:
            result.notes.append(f"{name}: {first.category} left out as an erratum: {erratum}")
            continue
        other = twin(name, listed)
        if first.category == "unsupported_op" and other and runs_on_mainstream(listed[other]):
            result.notes.append(
                f"{name}: marked unsupported, but the list supports {other}, which it is a "
                "wrapper of (or wrapped by); left out as a contradiction"
            )
            continue
        keywords = sorted({k for o in found for k in o.keywords})
        result.entries[name] = Outcome(
            name, first.document, "entry", first.category, first.tip, tuple(keywords)
        )
    return result


def drop_superseded(builds: Sequence[Build]) -> None:
    """Leave out an API marked unsupported by a list when the list of a newer version says it
    runs (the lists of all versions are maintained together, for one torch_npu release train;
    support does not go away, so the older mark is more likely unverified than true)."""
    ordered = sorted(builds, key=lambda b: version_key(b.source.version))
    for i, older in enumerate(ordered):
        for name, entry in sorted(older.entries.items()):
            if entry.category != "unsupported_op":
                continue
            newer = [
                b.source.version
                for b in ordered[i + 1 :]
                if name in b.listed and runs_on_mainstream(b.listed[name])
            ]
            if newer:
                del older.entries[name]
                older.notes.append(
                    f"{name}: marked unsupported, but the newer list(s) of {', '.join(newer)} "
                    "support it; left out"
                )


def render(table: dict[str, Any]) -> str:
    return json.dumps(table, indent=1, ensure_ascii=False) + "\n"


# -- review -------------------------------------------------------------------------------


def summary(builds: Sequence[Build], examples: int) -> str:
    lines = ["# Operator-support tables: classification summary", ""]
    for b in builds:
        cats = Counter(e.category for e in b.entries.values())
        status = Counter(o.status for o in b.outcomes)
        lines.append(
            f"- {b.source.version}: {len(b.entries)} entries ({cats['unsupported_op']} "
            f"unsupported_op, {cats['restricted_op']} restricted_op) from "
            f"{len(b.outcomes)} listed APIs; {b.source.describe()}"
        )
        lines.append("  - " + ", ".join(f"{k}: {v}" for k, v in sorted(status.items())))
        dropped = sorted({o.api for o in b.outcomes if o.status.endswith("[an entry dropped]")})
        if dropped:
            lines.append(
                f"  - marked unsupported, but not a module-level name of torch {b.torch_version} "
                f"({len(dropped)}): {', '.join(dropped)}"
            )
        lines.extend(f"  - note: {n}" for n in b.notes)
    lines += ["", "## Restriction clauses of supported module-level APIs (all versions)", ""]
    seen: dict[str, Counter[str]] = defaultdict(Counter)
    apis: dict[tuple[str, str], set[str]] = defaultdict(set)
    for b in builds:
        for o in b.outcomes:
            for kind, clause in o.clause_kinds:
                seen[kind][clause] += 1
                apis[(kind, clause)].add(o.api)
    for kind, meaning in CLAUSE_CLASSES.items():
        found = seen.get(kind, Counter())
        lines.append(
            f"### {kind}: {sum(found.values())} clauses ({len(found)} distinct) -- {meaning}"
        )
        lines.append("")
        for clause, count in found.most_common(examples):
            names = sorted(apis[(kind, clause)])
            shown = ", ".join(names[:3]) + (f" +{len(names) - 3}" if len(names) > 3 else "")
            lines.append(f"- {count}x `{clause[:160]}` -- {shown}")
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mirror", type=Path, help="a clone or (bare) mirror of Ascend/pytorch")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="default: %(default)s")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when a file would change"
    )
    parser.add_argument(
        "--summary", action="store_true", help="print the classification summary (markdown)"
    )
    parser.add_argument("--examples", type=int, default=30, help="per class in --summary")
    args = parser.parse_args(argv)
    if try_git(args.mirror, "rev-parse", "--git-dir") is None:
        parser.error(f"{args.mirror} is not a git repository")
    sources, notes = discover(args.mirror)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    if not sources:
        parser.error(f"no pytorch_X-Y-Z folder under {' or '.join(DOC_FOLDERS)} in {args.mirror}")
    torch_names = TorchNames()
    stale = 0
    builds = [build(args.mirror, source, torch_names) for source in sources]
    drop_superseded(builds)
    for result in builds:
        source = result.source
        text = render(result.table())
        target = args.out / f"{source.version}.json"
        same = target.is_file() and target.read_text(encoding="utf-8") == text
        cats = Counter(e.category for e in result.entries.values())
        counts = f"unsupported_op {cats['unsupported_op']}, restricted_op {cats['restricted_op']}"
        if args.check:
            stale += not same
            print(f"{target}: {'up to date' if same else 'STALE'} ({counts})")
        else:
            args.out.mkdir(parents=True, exist_ok=True)
            if not same:
                target.write_text(text, encoding="utf-8")
            print(f"{target}: {'unchanged' if same else 'written'} ({counts})")
        for note in result.notes:
            print(f"  note ({source.version}): {note}", file=sys.stderr)
    if args.summary:
        print(summary(builds, args.examples))
    for tip in sorted(UNTRANSLATED):
        print(f"untranslated (add it to {TRANSLATIONS.name}): {tip}", file=sys.stderr)
    return 1 if stale or UNTRANSLATED else 0


if __name__ == "__main__":
    sys.exit(main())
