"""A shard's part keeps every field of its files' records (record_codec, the cache's codec too):
the merged run reports what one run reports, the LibCST stages that ran on each file included."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from ms_fmk_transplt.events import ChangeEvent, FileStatus, Notice, Operation, Severity
from ms_fmk_transplt.records import FileRecord, RunOptions, RunResult
from ms_fmk_transplt.run import shards
from ms_fmk_transplt.run.record_codec import Malformed, full_record_from_plain, full_record_to_plain
from ms_fmk_transplt.scan.discover import Project
from ms_fmk_transplt.tables import load_tables

ROOT = Path(__file__).resolve().parent.parent
SIMILAR = [ROOT / "fixtures" / "rules" / f"similar.{name}" for name in ("flash_attention", "nvtx")]


def _every_field_set() -> FileRecord:
    """A record none of whose fields is at its default (each event's and notice's neither)."""
    event = ChangeEvent(
        "pkg/m.py", 3, 4, "similar.flash_attention", Operation.INSERT, "msg", "a", "b", 5, 6, True
    )
    notice = Notice(
        "pkg/m.py", 7, "unsupported.cuda_only_api", Severity.INFO, "m", "api", "c", "a", "t", 8
    )
    notice = dataclasses.replace(notice, out_line=9, out_end_line=10)
    record = FileRecord(
        "pkg/m.py",
        FileStatus.CHANGED,
        True,
        True,
        datetime(2026, 1, 2, 3, 4, 5, 678901),
        [event],
        [notice],
        cached=True,
        timings={"analyse": 0.25, "rewrite": 1.5},
        libcst_stages="user_rules,similar",
        framework="tensorflow",
    )
    defaults = FileRecord("", FileStatus.UNCHANGED, False, False, datetime(2000, 1, 1))
    for f in dataclasses.fields(FileRecord):
        assert getattr(record, f.name) != getattr(defaults, f.name), f.name
    for item in (event, notice):
        for f in dataclasses.fields(item):
            assert f.default is dataclasses.MISSING or getattr(item, f.name) != f.default, f.name
    return record


def test_a_part_s_records_keep_every_field(tmp_path: Path) -> None:
    """Written by write_records and read back by the merge: the same record, field for field."""
    record = _every_field_set()
    result = RunResult(
        RunOptions("in", "out"),
        Project(tmp_path / "p", "p"),
        tmp_path,
        datetime.now(),
        load_tables(),
    )
    result.files.append(record)
    part = tmp_path / f"p_msft{shards.suffix((1, 1))}"
    part.mkdir()
    shards.write_records(part / shards.RECORDS, result, (1, 1), {record.path: 0})
    ((_, data),) = shards.load_parts(tmp_path / "p_msft", 1)
    assert shards.file_record(data["files"][0]) == record


def test_a_record_with_a_field_of_the_wrong_type_is_malformed() -> None:
    plain = json.loads(json.dumps(full_record_to_plain(_every_field_set())))
    assert full_record_from_plain(plain) == _every_field_set()
    for key, value in (("timings", {"analyse": "1"}), ("cached", 1), ("time", "noon")):
        with pytest.raises(Malformed):
            full_record_from_plain({**plain, key: value})
    with pytest.raises(Malformed, match="'line' of a Notice is not int"):
        full_record_from_plain({**plain, "notices": [["pkg/m.py", "7", *plain["notices"][0][2:]]]})


def _json_run(*args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", "-q", "--no-cache", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout) if done.stdout else {}


def test_merged_parts_report_the_libcst_stages_of_one_run(tmp_path: Path) -> None:
    project = tmp_path / "p"
    for folder in SIMILAR:
        shutil.copytree(folder, project / folder.name)
    common = ["-i", str(project), "-sim", "--report-format", "json"]
    single = _json_run(*common, "-o", str(tmp_path / "single"))
    assert single["libcst_stages"]["files"] >= 2  # type: ignore[index]
    for i in (1, 2):
        _json_run(*common, "-o", str(tmp_path / "parts"), "--shard", f"{i}/2")
    merged = _json_run(*common, "-o", str(tmp_path / "parts"), "--merge-shards", "2")
    assert merged["libcst_stages"] == single["libcst_stages"]
    assert merged["counts"] == single["counts"]
