"""zoo train's run folder and what it refuses before training: another model's finished folder, a folder that
is a file or read-only, a max_len that keeps a remnant, a vocabulary too big; SIGTERM says how to resume."""
import subprocess
import sys

import pytest

from helpers import refused, run


TRAIN = ("train", "base", "--profile", "smoke", "--set", "train.steps=2", "--set", "eval.max_sentences=2",
         "--set", "train.checkpoint_every=2")


@pytest.mark.slow  # trains twice (2 steps each) and resumes
def test_train_into_a_finished_runs_folder_with_another_model(tmp_path, capsys):
    out = tmp_path / "run"
    code, _, err = run(*TRAIN, "--out", out, capsys=capsys)
    assert code == 0, err
    before = {p.name: p.read_bytes() for p in [*out.glob("*"), *(out / "checkpoints").glob("*")] if p.is_file()}
    refused(*run(*TRAIN, "--set", "model.h=4", "--set", "model.d_k=16", "--set", "model.d_v=16", "--out", out,
                 capsys=capsys), f"the run folder {out} holds the finished run of another model", "model.h: 8 -> 4",
            "new --out", f"delete {out}")
    after = {p.name: p.read_bytes() for p in [*out.glob("*"), *(out / "checkpoints").glob("*")] if p.is_file()}
    assert after == before  # nothing set aside as bad, no second model's metrics appended
    code, _, err = run(*TRAIN[:-2], "--set", "train.checkpoint_every=3", "--set", "eval.beam_size=1", "--out", out,
                       capsys=capsys)  # the same model, another eval: resumed as before, with its note
    assert code == 0 and "trained under another config" in err, err


@pytest.mark.parametrize("make", ["file", "checkpoints-file", "read-only"])
def test_train_into_a_folder_that_is_a_file_or_read_only(tmp_path, capsys, make):
    import os
    out = tmp_path / "run"
    if make == "file":
        out.write_text("notes\n")
        fragment = f"{out} is a file, not a folder"
    elif make == "checkpoints-file":
        out.mkdir()
        (out / "checkpoints").write_text("notes\n")
        fragment = f"{out / 'checkpoints'} is a file, not a folder"
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes in a read-only folder")
        out.mkdir()
        out.chmod(0o555)
        fragment = f"cannot write in {out}"
    refused(*run(*TRAIN, "--out", out, capsys=capsys), f"the run folder {out}", fragment)


@pytest.mark.slow  # its second half trains a model
def test_a_tiny_data_max_len_that_keeps_a_remnant_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    refused(*run(*TRAIN, "--set", "data.max_len=8", "--out", out, capsys=capsys), "data.max_len: 8 word-pieces keeps 15 of "
            "2,000 training pairs of multi30k (0.8%", "raise data.max_len")
    assert not (out / "checkpoints").exists() or not any((out / "checkpoints").iterdir())  # nothing trained
    code, _, err = run(*TRAIN, "--set", "data.max_len=32", "--out", tmp_path / "ok", capsys=capsys)
    assert code == 0, err  # 32 keeps 1,750 of 2,000: a run as before


def test_a_vocabulary_too_big_for_the_corpus_is_refused_before_training(tmp_path, capsys):
    out = tmp_path / "run"
    refused(*run(*TRAIN, "--set", "data.vocab_size=200000", "--out", out, capsys=capsys),
            "vocab_size 200000 is too large for corpus 'multi30k'", "at most 83510 BPE pieces")
    assert not any((out / "checkpoints").glob("*.pt"))


@pytest.mark.slow
def test_sigterm_says_how_to_resume(tmp_path):
    import signal
    import time
    p = subprocess.Popen([sys.executable, "-m", "zoo.cli", "train", "base", "--profile", "smoke", "--set",
                          "train.steps=100000", "--out", str(tmp_path / "r")], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not list((tmp_path / "r").glob("metrics.jsonl")):
            time.sleep(0.05)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 143 and "interrupted by SIGTERM; run the same command again to resume" in err, err[-2000:]
