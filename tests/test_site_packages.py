"""Finding the installed packages --deps analyses (issue 47, scan/deps_folders.py and
scan/site_packages.py): the folders each --deps value names, the folder, distribution and
version of each name the project imports, and their files, on small trees built here (and once
on the test venv itself). Nothing found is imported or run; the interpreter asked by ``--deps
auto`` is a script here that records how it was called."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ms_fmk_transplt.errors import UserError
from ms_fmk_transplt.scan import deps_folders as deps_folders_module
from ms_fmk_transplt.scan.deps_folders import deps_folders
from ms_fmk_transplt.scan.project_scan import _digest
from ms_fmk_transplt.scan.site_packages import (
    MAX_BYTES,
    InstalledPackage,
    content_digest,
    find_packages,
    package_files,
)

posix_only = pytest.mark.skipif(os.name != "posix", reason="a shell script stands in for python3")


def write(path: Path, text: str | bytes = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def dist_info(
    site: Path, dist: str, version: str, top_level: str | None = None, record: str | None = None
) -> Path:
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    write(info / "METADATA", f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n\nText.\n")
    if top_level is not None:
        write(info / "top_level.txt", top_level)
    if record is not None:
        write(info / "RECORD", record)
    return info


def venv(root: Path) -> Path:
    """A venv holding ``fancylib`` 1.2.3 (distribution ``fancy-lib``, listed by top_level.txt)."""
    write(root / "pyvenv.cfg", "home = /usr/bin\n")
    site = root / "lib" / "python3.11" / "site-packages"
    write(site / "fancylib" / "__init__.py", "import torch\n")
    dist_info(site, "fancy-lib", "1.2.3", top_level="fancylib\n")
    return site


# ---------------------------------------------------------------------------- deps_folders


def test_a_venv_names_its_site_packages_and_the_package_its_dist_and_version(
    tmp_path: Path,
) -> None:
    site = venv(tmp_path / "env")
    assert deps_folders([str(tmp_path / "env")], {}) == [site]
    found = find_packages([site], ["fancylib", "os", "absent"])
    package = InstalledPackage("fancylib", site / "fancylib", "fancy-lib", "1.2.3")
    assert found == {"fancylib": package}


def test_a_conda_env_without_pyvenv_cfg_is_a_prefix_too(tmp_path: Path) -> None:
    site = write(tmp_path / "envs" / "x" / "lib" / "python3.10" / "site-packages" / "a.py").parent
    write(tmp_path / "envs" / "x" / "bin" / "python3.10")
    assert deps_folders([str(tmp_path / "envs" / "x")], {}) == [site]


def test_a_site_packages_folder_is_itself_and_duplicates_come_once(tmp_path: Path) -> None:
    site = venv(tmp_path / "env")
    values = [str(site), str(tmp_path / "env"), str(site / "fancylib"), str(site)]
    assert deps_folders(values, {}) == [site]


def test_a_source_tree_is_itself_and_its_src(tmp_path: Path) -> None:
    tree = tmp_path / "lib_src"
    write(tree / "pyproject.toml", "[project]\nname = 'mylib'\n")
    write(tree / "src" / "mylib" / "__init__.py")
    assert deps_folders([str(tree)], {}) == [tree, tree / "src"]
    found = find_packages([tree, tree / "src"], ["mylib"])
    assert found["mylib"] == InstalledPackage("mylib", tree / "src" / "mylib", "", "")
    flat = tmp_path / "flat"
    write(flat / "setup.py", "")
    assert deps_folders([str(flat)], {}) == [flat]  # no src/: itself only


def test_a_package_folder_names_the_folder_holding_it(tmp_path: Path) -> None:
    write(tmp_path / "checkout" / "basicsr" / "__init__.py")
    write(tmp_path / "checkout" / "basicsr" / "train.py")
    assert deps_folders([str(tmp_path / "checkout" / "basicsr")], {}) == [tmp_path / "checkout"]


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda p: p / "missing", "does not exist"),
        (lambda p: write(p / "file.txt", "x"), "is not a folder"),
        (lambda p: write(p / "docs" / "README.md", "x").parent, "holds no Python package"),
        (lambda p: write(p / "env" / "pyvenv.cfg", "").parent, "holds no Python package"),
    ],
)
def test_bad_values_are_one_line_errors_naming_the_path(
    tmp_path: Path, make: Callable[[Path], Path], problem: str
) -> None:
    path = make(tmp_path)
    with pytest.raises(UserError) as caught:
        deps_folders([str(path)], {})
    assert caught.value.problem == problem
    assert str(caught.value) == f"{path}: {problem}" and "\n" not in str(caught.value)


def test_auto_takes_the_virtual_env(tmp_path: Path) -> None:
    site = venv(tmp_path / "env")
    environ = {"VIRTUAL_ENV": str(tmp_path / "env"), "PATH": ""}  # PATH is not asked
    assert deps_folders(["auto"], environ) == [site]
    assert deps_folders(["auto", str(site)], environ) == [site]


def fake_python(bin_dir: Path, body: str) -> Path:
    """A ``python3`` on PATH that records its arguments in args.json, then runs ``body``."""
    record = bin_dir.parent / "args.json"
    script = write(
        bin_dir / "python3",
        f'#!{sys.executable}\nimport json, sys\nopen({str(record)!r}, "w").write('
        f"json.dumps(sys.argv[1:]))\n{body}\n",
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


@posix_only
def test_auto_asks_the_python3_on_path_isolated_and_without_site(tmp_path: Path) -> None:
    site = venv(tmp_path / "env")
    fake_python(tmp_path / "bin", f"print(json.dumps([{str(site)!r}, {str(site)!r}]))")
    assert deps_folders(["auto"], {"PATH": str(tmp_path / "bin")}) == [site]
    args = json.loads((tmp_path / "args.json").read_text(encoding="utf-8"))
    assert args[:3] == ["-I", "-S", "-c"] and "sysconfig" in args[3]
    assert "import site" not in args[3]


@posix_only
def test_auto_through_path_finds_a_venvs_own_site_packages(tmp_path: Path) -> None:
    """The venv's python3 on PATH, no VIRTUAL_ENV: its own site-packages, not its base's (before
    Python 3.11 it is site, not run here, that makes pyvenv.cfg's folder the prefix)."""
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    site = env / "lib" / version / "site-packages"
    assert deps_folders(["auto"], {"PATH": str(env / "bin")}) == [site]


@posix_only
@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("print('<html>not json')", "its output is not a JSON list of paths"),
        ("print(json.dumps({'purelib': '/x'}))", "its output is not a JSON list of paths"),
        ("print(json.dumps([1, 2]))", "its output is not a JSON list of paths"),
        ("sys.stderr.write('Fatal: no\\nencodings\\n'); sys.exit(3)", "exit status 3: encodings"),
        ("print(json.dumps(['/nonexistent/site-packages']))", "none of its paths is a folder"),
    ],
)
def test_a_python3_that_does_not_answer_is_a_one_line_error(
    tmp_path: Path, body: str, reason: str
) -> None:
    script = fake_python(tmp_path / "bin", body)
    with pytest.raises(UserError) as caught:
        deps_folders(["auto"], {"PATH": str(tmp_path / "bin")})
    assert str(caught.value) == f"{script}: python3 did not say its site-packages: {reason}"


@posix_only
def test_a_python3_that_hangs_is_given_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deps_folders_module, "_ASK_TIMEOUT", 0.5)
    script = fake_python(tmp_path / "bin", "import time; time.sleep(30)")
    start = time.monotonic()
    with pytest.raises(UserError) as caught:
        deps_folders(["auto"], {"PATH": str(tmp_path / "bin")})
    assert time.monotonic() - start < 10
    reason = "python3 did not say its site-packages: no answer within 0.5 s"
    assert str(caught.value) == f"{script}: {reason}"


def test_auto_without_python3_on_path(tmp_path: Path) -> None:
    with pytest.raises(UserError) as caught:
        deps_folders(["auto"], {"PATH": str(tmp_path)})
    assert str(caught.value) == "auto: python3 not found on PATH"


@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="the tests do not run in a venv")
def test_auto_on_the_test_venv_finds_pytest_with_its_version() -> None:
    environ = {"VIRTUAL_ENV": sys.prefix, "PATH": os.environ.get("PATH", "")}
    folders = deps_folders(["auto"], environ)
    found = find_packages(folders, ["pytest", "_pytest"])
    assert found["pytest"].dist == "pytest" and found["pytest"].version == pytest.__version__
    assert found["_pytest"].dist == "pytest"  # listed by the same distribution
    assert Path(pytest.__file__).parent == found["pytest"].root


# ---------------------------------------------------------------------------- find_packages


def test_a_record_only_dist_info_an_egg_info_and_a_single_module(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    write(site / "yaml" / "__init__.py")
    record = "yaml/__init__.py,sha256=x,1\nPyYAML-6.0.1.dist-info/RECORD,,\n"
    dist_info(site, "PyYAML", "6.0.1", record=record)
    write(site / "oldpkg" / "__init__.py")
    write(site / "old_pkg-0.9-py3.9.egg-info" / "PKG-INFO", "Name: old-pkg\nVersion: 0.9\n")
    write(site / "old_pkg-0.9-py3.9.egg-info" / "top_level.txt", "oldpkg\n")
    write(site / "six.py")
    dist_info(site, "six", "1.16.0", record="six.py,,\n__pycache__/six.cpython-311.pyc,,\n")
    found = find_packages([site], ["yaml", "oldpkg", "six", "__pycache__"])
    assert found == {
        "yaml": InstalledPackage("yaml", site / "yaml", "PyYAML", "6.0.1"),
        "oldpkg": InstalledPackage("oldpkg", site / "oldpkg", "old-pkg", "0.9"),
        "six": InstalledPackage("six", site / "six.py", "six", "1.16.0"),
    }


def test_a_namespace_package_and_which_folder_wins(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    write(first / "google" / "protobuf" / "message.py")  # a namespace folder
    write(first / "nsonly" / "data.txt")  # no .py below: not a package
    dist_info(first, "protobuf", "4.0", top_level="google\n")
    dist_info(first, "google-auth", "2.0", top_level="google\n")
    write(second / "google" / "__init__.py")  # a regular package later on the path wins
    write(second / "mod" / "x.py")
    write(second / "mod.py")  # a module beats a namespace folder in the same folder
    found = find_packages([first, second], ["google", "nsonly", "mod"])
    assert found["google"].root == second / "google"
    assert found["mod"].root == second / "mod.py"
    assert "nsonly" not in found
    only_first = find_packages([first], ["google"])["google"]
    # two distributions list the namespace: neither owns it
    assert (only_first.root, only_first.dist, only_first.version) == (first / "google", "", "")


def test_the_distribution_named_like_the_import_name_is_preferred(tmp_path: Path) -> None:
    site = tmp_path / "site"
    write(site / "torch" / "__init__.py")
    dist_info(site, "torch", "2.1.0", top_level="torch\n")
    dist_info(site, "torch-extras", "0.1", top_level="torch\ntorch_extras\n")
    assert find_packages([site], ["torch"])["torch"].version == "2.1.0"
    dist_info(site, "torch", "2.0.0", top_level="torch\n")  # a stale one beside it
    assert find_packages([site], ["torch"])["torch"].version == ""


def test_garbled_metadata_gives_empty_dist_and_version(tmp_path: Path) -> None:
    site = tmp_path / "site"
    for name in ("bad_meta", "bad_record", "bad_top", "bad_version"):
        write(site / name / "__init__.py")
    write(site / "bad_meta-1.0.dist-info" / "METADATA", b"\xff\xfeName: \x00\x01\n")
    write(site / "bad_meta-1.0.dist-info" / "top_level.txt", "bad_meta\n")
    write(site / "bad_record-1.0.dist-info" / "METADATA", "Name: bad_record\nVersion: 1.0\n")
    write(site / "bad_record-1.0.dist-info" / "RECORD", b'"bad_record/__init__.py,\x00\xff')
    write(site / "bad_top-1.0.dist-info" / "top_level.txt", b"\xff\xfe\xfd")
    write(site / "bad_top-1.0.dist-info" / "METADATA", "Name: bad_top\nVersion: 1.0\n")
    write(site / "bad_version-1.0.dist-info" / "top_level.txt", "bad_version\n")
    write(site / "bad_version-1.0.dist-info" / "METADATA", "Name: bad_version\nVersion: 1 ; rm\n")
    found = find_packages([site], ["bad_meta", "bad_record", "bad_top", "bad_version"])
    assert {n: (p.dist, p.version) for n, p in found.items()} == {
        "bad_meta": ("", ""),
        "bad_record": ("", ""),
        "bad_top": ("", ""),
        "bad_version": ("bad_version", ""),
    }


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links")
def test_links_are_followed_only_inside_the_same_folder(tmp_path: Path) -> None:
    site, elsewhere = tmp_path / "site", tmp_path / "elsewhere"
    write(site / "_vendor" / "inner" / "__init__.py")
    write(elsewhere / "outer" / "__init__.py")
    os.symlink(site / "_vendor" / "inner", site / "inner")  # inside: followed
    os.symlink(elsewhere / "outer", site / "outer")  # outside (an editable install): not
    os.symlink("loop", site / "loop")  # a loop
    os.symlink("loopb", site / "loopa")
    os.symlink("loopa", site / "loopb")
    os.symlink(".", site / "itself")  # the folder itself
    os.symlink("missing", site / "dangling.py")
    found = find_packages([site], ["inner", "outer", "loop", "loopa", "itself", "dangling"])
    assert found == {"inner": InstalledPackage("inner", site / "_vendor" / "inner", "", "")}
    assert package_files(found["inner"]) == [("inner/__init__.py", b"")]


def test_find_packages_on_300_distributions_is_fast(tmp_path: Path) -> None:
    site = tmp_path / "site"
    for i in range(300):
        write(site / f"pkg{i}" / "__init__.py")
        if i % 2:
            dist_info(site, f"dist-{i}", "1.0", top_level=f"pkg{i}\n")
        else:
            record = "".join(f"pkg{i}/m{j}.py,sha256=abc,10\n" for j in range(200))
            dist_info(site, f"pkg{i}", "1.0", record=record)
    names = [f"pkg{i}" for i in range(0, 300, 7)]
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        found = find_packages([site], names)
        best = min(best, time.perf_counter() - start)
    assert len(found) == len(names) and found["pkg7"].dist == "dist-7"
    assert found["pkg14"].dist == "pkg14"
    assert best < 0.1, best


# ---------------------------------------------------------------------------- package_files


def test_package_files_skips_caches_data_folders_links_and_large_files(tmp_path: Path) -> None:
    site = tmp_path / "site"
    root = site / "lib"
    write(root / "__init__.py", "x = 1\n")
    write(root / "sub" / "b.py", "b = 2\n")
    write(root / "sub" / "a.py", "a = 1\n")
    write(root / "__pycache__" / "stale.py", "no\n")
    write(root / "tests-data" / "case.py", "no\n")
    write(root / "README.md", "no\n")
    write(root / "generated.py", b"#" * (MAX_BYTES + 1))
    if hasattr(os, "symlink"):
        os.symlink(root / "sub" / "a.py", root / "alias.py")
        os.symlink(root / "sub", root / "subalias")
    package = InstalledPackage("lib", root, "", "")
    files = package_files(package)
    assert files == [
        ("lib/__init__.py", b"x = 1\n"),
        ("lib/sub/a.py", b"a = 1\n"),
        ("lib/sub/b.py", b"b = 2\n"),
    ]
    assert len(package_files(package, max_files=2)) == 2
    module = InstalledPackage("six", write(site / "six.py", "six = 6\n"), "six", "1.0")
    assert package_files(module) == [("six.py", b"six = 6\n")]


def test_content_digest_follows_every_byte_and_path(tmp_path: Path) -> None:
    files = [("lib/__init__.py", b"x = 1\n"), ("lib/a.py", b"a = 1\n")]
    digest = content_digest(files)
    assert len(digest) == 64 and digest == _digest(files).hex()  # the project's own scheme
    assert content_digest([files[0], ("lib/a.py", b"a = 2\n")]) != digest
    assert content_digest([files[0], ("lib/b.py", b"a = 1\n")]) != digest
    # the lengths are in it: moving a byte from a path into the content changes it
    assert content_digest([("ab", b"c")]) != content_digest([("a", b"bc")])
