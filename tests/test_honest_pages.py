"""Pages and commands that say only what is so (issue 51): `zoo status FILE` lists that file's rows only,
NaN is never printed as a figure, `zoo compare` signs a difference as the pages do, LaTeX tables fit a page,
an empty report is refused."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from zoo.cli import main
from zoo.runner.store import Store


def run(*argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_status_of_a_spec_file_lists_only_that_files_rows(tmp_path, capsys, monkeypatch):
    """Two files of one name in two folders: `zoo status d1/exp.yaml` lists d1's rows, not d2's (it listed both:
    it matched the file's stem). The stem alone, as status prints it, still names both."""
    monkeypatch.chdir(tmp_path)
    for d in ("d1", "d2"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "exp.yaml").write_text("base: base\n")
    st = Store(tmp_path / "zoo.db")
    st.upsert("d1/exp.yaml", "one-seed1", "smoke", status="finished", step=5, steps=5)
    st.upsert(str(tmp_path / "d2" / "exp.yaml"), "two-seed1", "smoke", status="finished", step=5, steps=5)
    code, out, err = run("status", "d1/exp.yaml", "--runs", "zoo.db", capsys=capsys)
    assert code == 0 and "one-seed1" in out and "two-seed1" not in out and "1 trials" in out, out + err
    code, out, _ = run("status", str(tmp_path / "d2" / "exp.yaml"), "--runs", "zoo.db", capsys=capsys)
    assert code == 0 and "two-seed1" in out and "one-seed1" not in out, out
    code, out, _ = run("status", "exp", "--runs", "zoo.db", capsys=capsys)
    assert code == 0 and "one-seed1" in out and "two-seed1" in out, out
