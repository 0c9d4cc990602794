"""The training recipe: schedule, label smoothing, checkpoints, averaging, resume; smoke runs."""
import json
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from zoo.spec import resolve
from zoo.spec.specfile import SpecError
from zoo.config import noam_lr
from zoo.train import average_checkpoints, checkpoints, load_checkpoint, smoothed_loss, train
from zoo.train.checkpointing import optim_file
from zoo.result import Resumed

from helpers import ran

pytestmark = pytest.mark.slow  # trains models (zoo train, in and out of process)


def test_noam_schedule_at_known_steps():
    # lr = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), the paper's equation (3)
    assert noam_lr(1, 512, 4000) == pytest.approx(512 ** -0.5 * 4000 ** -1.5)
    assert noam_lr(4000, 512, 4000) == pytest.approx(512 ** -0.5 * 4000 ** -0.5)  # the peak, 6.99e-4
    assert noam_lr(4000, 512, 4000) == pytest.approx(6.9877e-4, rel=1e-4)
    assert noam_lr(16000, 512, 4000) == pytest.approx(noam_lr(4000, 512, 4000) / 2)  # 1/sqrt decay
    assert noam_lr(2000, 512, 4000) == pytest.approx(noam_lr(4000, 512, 4000) / 2)  # linear warmup
    assert noam_lr(100, 256, 250, scale=0.4) == pytest.approx(0.4 * 256 ** -0.5 * 100 * 250 ** -1.5)


def test_cooldown_falls_linearly_to_zero_over_the_last_share():
    from zoo.config import ScheduleSpec
    from zoo.spec import resolve
    s = ScheduleSpec(warmup_steps=100, lr_scale=0.5, cooldown=0.2)  # 1000 steps: eq. 3 to 800, then linear
    top = noam_lr(800, 64, 100, 0.5)
    assert s.lr(800, 64, 1000) == pytest.approx(top)
    assert s.lr(400, 64, 1000) == pytest.approx(noam_lr(400, 64, 100, 0.5))  # untouched before
    assert s.lr(900, 64, 1000) == pytest.approx(top * 101 / 201)  # halfway down
    assert s.lr(1000, 64, 1000) == pytest.approx(top / 201)  # the last step still moves, a little
    assert all(s.lr(k, 64, 1000) > s.lr(k + 1, 64, 1000) for k in range(800, 1000))
    assert ScheduleSpec(warmup_steps=100).lr(1000, 64, 1000) == noam_lr(1000, 64, 100)  # off: eq. 3
    c = resolve("specs/base.yaml", None, "smoke")[0]  # the cooldown changes the result, so the hash
    cool = resolve("specs/base.yaml", None, "smoke", ["train.schedule.cooldown=0.2"])[0]
    assert cool.train.schedule.cooldown == 0.2 and cool.config_hash() != c.config_hash()


def test_label_smoothing_hand_checked():
    # V = 4 tokens (0 = pad), target 2, eps 0.2: q = [0, 0.1, 0.8, 0.1] over tokens 0..3
    logits = torch.log(torch.tensor([[[0.1, 0.2, 0.5, 0.2]]]))
    target = torch.tensor([[2]])
    loss, nll = smoothed_loss(logits, target, 0.2)
    expected = -(0.1 * math.log(0.2) + 0.8 * math.log(0.5) + 0.1 * math.log(0.2))
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    assert nll.item() == pytest.approx(-math.log(0.5), rel=1e-5)
    # padding targets contribute nothing; eps 0 is plain cross-entropy
    loss_pad, _ = smoothed_loss(logits.repeat(1, 2, 1), torch.tensor([[2, 0]]), 0.2)
    assert loss_pad.item() == pytest.approx(expected, rel=1e-5)
    assert smoothed_loss(logits, target, 0.0)[0].item() == pytest.approx(-math.log(0.5), rel=1e-5)


def _smoothed_loss_by_autograd(logits, target, eps):
    """The label-smoothed loss as first written, differentiated by autograd (the reference)."""
    V = logits.size(-1)
    logp = torch.log_softmax(logits.float(), dim=-1).view(-1, V)
    target = target.reshape(-1)
    logp, target = logp[target != 0], target[target != 0]
    nll = -logp.gather(1, target[:, None]).squeeze(1)
    others = -(logp.sum(1) - logp[:, 0]) - nll
    return ((1 - eps) * nll + eps / (V - 2) * others).sum(), nll.sum()


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.3])
def test_smoothed_loss_gradient_equals_autograd(eps):
    """The written-out gradient (softmax - q) equals autograd's of the formula, pad rows excluded."""
    torch.manual_seed(0)
    logits = (3 * torch.randn(4, 9, 50)).requires_grad_()
    target = torch.randint(1, 50, (4, 9))
    target[0, 5:], target[3, 8] = 0, 0
    loss, nll = smoothed_loss(logits, target, eps)
    ref, ref_nll = _smoothed_loss_by_autograd(logits, target, eps)
    assert loss.item() == pytest.approx(ref.item(), rel=1e-6)
    assert nll.item() == pytest.approx(ref_nll.item(), rel=1e-6)
    g, = torch.autograd.grad(2.5 * loss, logits)
    g_ref, = torch.autograd.grad(2.5 * ref, logits)
    torch.testing.assert_close(g, g_ref, rtol=1e-5, atol=1e-6)
    assert not g[0, 5:].any()  # padding rows get no gradient


def test_checkpoint_averaging(tmp_path):
    paths = []
    for i, v in enumerate([1.0, 2.0, 6.0]):
        p = tmp_path / f"step_{i:08d}.pt"
        torch.save({"model": {"w": torch.full((2, 2), v), "b": torch.tensor([v, -v])}}, p)
        paths.append(p)
    avg = average_checkpoints(paths)
    assert torch.allclose(avg["w"], torch.full((2, 2), 3.0)) and torch.allclose(avg["b"], torch.tensor([3.0, -3.0]))


def _smoke(repo, spec="table3_A.yaml", variant="A2", sets=()):
    return resolve(repo / "specs" / spec, variant, "smoke", list(sets))[0]


def test_smoke_run_trains_and_scores(repo, data_root, tmp_path):
    cfg = _smoke(repo, sets=["train.steps=12", "train.eval_every=6", "train.checkpoint_every=4", "train.keep_checkpoints=2",
                             "train.checkpoint_minutes=0"])  # 0: every checkpoint_every steps
    seen = []
    s = train(cfg, tmp_path / "run", data_root, report=seen.append)
    assert s.steps_done == 12 and s.dev_ppl > 1 and 0 <= s.primary.bleu <= 100
    assert "nrefs:1|case:mixed" in s.primary.bleu_signature and s.eval_split == "dev"
    losses = [m.loss for m in seen if getattr(m, "loss", None) is not None]
    assert losses[-1] < losses[0]  # it learns something
    kept = checkpoints(tmp_path / "run")
    assert len(kept) == cfg.train.keep_checkpoints  # last k kept
    # only the newest carries the optimizer state; the older ones hold what averaging needs
    assert [optim_file(k).exists() for k in kept] == [False] * (len(kept) - 1) + [True]
    att = s.attention
    assert len(att.weights) == cfg.model.h and len(att.weights[0]) == len(att.tokens)
    assert all(abs(sum(row) - 1) < 1e-3 for row in att.weights[0])
    # a finished run is not redone
    t = time.time()
    assert train(cfg, tmp_path / "run", data_root).steps_done == 12 and time.time() - t < 2


def test_logged_loss_does_not_depend_on_the_checkpoint_cadence(repo, data_root, tmp_path):
    """A checkpoint between two logs reads the loss sums too; the log still averages its whole interval
    (it once divided the steps since the checkpoint by the tokens since the last log)."""
    logged = []
    for every in (4, 3):  # 3: checkpoints at steps 3, 6, 9 fall between the logs at 4, 8, 12
        seen = []
        cfg = _smoke(repo, sets=["train.steps=12", "train.log_every=4", f"train.checkpoint_every={every}",
                                 "train.checkpoint_minutes=0", "train.eval_every=12", "eval.max_sentences=2"])
        train(cfg, tmp_path / f"every{every}", data_root, report=seen.append)
        logged.append([(m.step, round(m.loss, 4), round(m.nll, 4)) for m in seen if getattr(m, "loss", None) is not None])
    assert logged[0] == logged[1] and [s for s, *_ in logged[0]] == [1, 4, 8, 12]


def test_every_scored_split_keeps_its_sentence_likelihoods(repo, data_root, tmp_path):
    """Claims pool sentences across splits: the extra splits and the perplexity-only ones keep per-sentence
    [NLL, tokens] of the final weights (the dev split has dev_nll_stats), and a perplexity-only split
    is not decoded."""
    cfg = _smoke(repo, sets=["train.steps=4", "eval.max_sentences=5", "eval.extra_splits=[test]",
                             "eval.ppl_splits=[test_2017_flickr]"])
    assert cfg.data.dataset == "multi30k"
    s = train(cfg, tmp_path / "run", data_root)
    test, ppl_only = s.splits["test"], s.splits["test_2017_flickr"]
    assert test.bleu is not None and len(test.nll_stats) == 5 and all(n > 0 for _, n in test.nll_stats)
    assert ppl_only.bleu is None and ppl_only.eval_sentences == len(ppl_only.nll_stats) == 5
    assert ppl_only.ppl == pytest.approx(math.exp(sum(x for x, _ in ppl_only.nll_stats) / sum(n for _, n in ppl_only.nll_stats)))
    assert 1 < ppl_only.ppl < 1e6 and not (tmp_path / "run" / "hyps.test_2017_flickr.txt").exists()
    assert s.splits["dev"].nll_stats is None and len(s.dev_nll_stats) >= 5  # dev keeps its own field
    with pytest.raises(SpecError, match="corpus multi30k has no split 'test_2099'"):
        _smoke(repo, sets=["eval.ppl_splits=[test_2099]"])


def test_averaging_uses_last_k(repo, data_root, tmp_path):
    cfg = _smoke(repo, "table2_en_de_base.yaml", None, ["train.steps=8", "train.checkpoint_every=2"])
    assert cfg.eval.average_checkpoints == 5 and cfg.eval.split == "test"
    s = train(cfg, tmp_path / "run", data_root)
    assert s.primary.eval_weights == "average of the last 4 checkpoints" and s.eval_split == "test"
    # the same run's final weights, scored at the same step, so averaging is judged against its own run
    assert s.primary.bleu_final_weights is not None


def test_resume_continues_exactly(repo, data_root, tmp_path):
    """Training 10 steps, stopping, and continuing to 20 gives the same weights as 20 straight."""
    sets = ["train.checkpoint_every=5", "model.dropout=0.1", "eval.max_sentences=2"]
    straight = _smoke(repo, sets=sets + ["train.steps=20"])
    train(straight, tmp_path / "a", data_root)
    first = _smoke(repo, sets=sets + ["train.steps=10"])
    train(first, tmp_path / "b", data_root)
    (tmp_path / "b" / "summary.json").unlink()
    events = []
    train(straight, tmp_path / "b", data_root, report=events.append)
    assert Resumed(step=10) in events
    a = torch.load(checkpoints(tmp_path / "a")[-1], weights_only=True)["model"]
    b = torch.load(checkpoints(tmp_path / "b")[-1], weights_only=True)["model"]
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_resumed_at_the_final_checkpoint_keeps_dev_perplexity(repo, data_root, tmp_path):
    """Killed after its last checkpoint but before scoring, a run resumes with no step left to train:
    its dev perplexity (and per-sentence likelihood, which the claims resample) is still measured."""
    cfg = _smoke(repo, sets=["train.steps=6", "train.checkpoint_every=3", "eval.max_sentences=2"])
    first = train(cfg, tmp_path / "run", data_root)
    (tmp_path / "run" / "summary.json").unlink()
    events = []
    again = train(cfg, tmp_path / "run", data_root, report=events.append)
    assert Resumed(step=6) in events
    assert again.dev_ppl == pytest.approx(first.dev_ppl, rel=1e-5)
    assert np.allclose(again.dev_nll_stats, first.dev_nll_stats, rtol=1e-5)


def test_killed_zoo_train_resumes_from_last_checkpoint(repo, data_root, tmp_path, capsys):
    """SIGKILLed in a process of its own after two checkpoints; the same command resumes from the last (here, in
    this process: what is tested is what the kill left)."""
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "zoo.cli", "train", str(repo / "specs/table3_C.yaml"), "--variant", "C1",
           "--profile", "smoke", "--out", str(out), "--set", "train.steps=400", "--set", "train.checkpoint_every=5",
           "--set", "train.checkpoint_minutes=0", "--set", "eval.max_sentences=2"]
    env = {**os.environ, "ZOO_DATA_DIR": str(data_root), "PYTHONUNBUFFERED": "1"}
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 300  # torch's import alone took 40 s on a busy 2-core machine
    while time.time() < deadline and len(checkpoints(out)) < 2 and p.poll() is None:
        time.sleep(0.05)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    done = torch.load(checkpoints(out)[-1], weights_only=True)["step"]
    assert 0 < done < 400
    cmd[cmd.index("train.steps=400")] = f"train.steps={done + 10}"
    r = ran(*cmd[3:], capsys=capsys)  # zoo train ...
    assert r.returncode == 0, r.stderr
    assert f"resumed from the checkpoint at step {done}" in r.stderr
    assert json.loads((out / "summary.json").read_text())["steps_done"] == done + 10


def test_a_finished_run_never_passes_for_a_new_one(repo, data_root, tmp_path):
    """`zoo train` on a folder whose run finished says so first, trains nothing and keeps the summary; so
    does a compiled run after an eager one (train.compile is not part of a run's identity: same arithmetic)."""
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "zoo.cli", "train", str(repo / "specs/table3_A.yaml"), "--variant", "A1",
           "--profile", "smoke", "--out", str(out), "--set", "train.steps=4", "--set", "eval.max_sentences=2"]
    env = {**os.environ, "ZOO_DATA_DIR": str(data_root)}
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("variant A1 (smoke): 4 steps") and "waiting on checkpoints" in first.stdout
    summary = (out / "summary.json").read_bytes()
    for extra in ([], ["--set", "train.compile=on"]):
        again = subprocess.run(cmd + extra, env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr
        assert again.stdout.splitlines()[0] == ("already finished at step 4: nothing trained; --out elsewhere to "
                                                "train again"), again.stdout
        assert again.stderr == "" and (out / "summary.json").read_bytes() == summary


def test_missing_data_is_a_clear_error(repo, tmp_path):
    r = subprocess.run([sys.executable, "-m", "zoo.cli", "train", str(repo / "specs/base.yaml"), "--profile", "smoke",
                        "--data-dir", str(tmp_path / "nothing"), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "zoo data fetch multi30k" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("spec,variant", [("table3_A.yaml", "A4"), ("table3_B.yaml", "B1"), ("table3_C.yaml", "C5"),
                                          ("table3_D.yaml", "D3"), ("table3_E.yaml", None), ("big.yaml", None)])
def test_smoke_trains_every_kind_of_row(repo, data_root, tmp_path, spec, variant):
    cfg = _smoke(repo, spec, variant, ["train.steps=4", "eval.max_sentences=2"])
    assert train(cfg, tmp_path / "r", data_root).steps_done == 4


def test_gpu_out_of_memory_fails_the_run_with_its_figures(repo, data_root, tmp_path, monkeypatch):
    """torch.cuda.OutOfMemoryError (raised here on the CPU: no test needs a GPU) becomes a clear
    error naming the step, the batch per device and what to change; Tune records it as the trial's."""
    from zoo.train import GPUOutOfMemoryError, loop as ztrain
    cfg = _smoke(repo, sets=["train.steps=6"])
    calls = []

    def oom(*a, **k):
        calls.append(1)
        if len(calls) > 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(*a, **k)
    real = ztrain._step
    monkeypatch.setattr(ztrain, "_step", oom)
    with pytest.raises(GPUOutOfMemoryError, match=r"out of GPU memory at step 3 .*tokens per device.*max_tokens_per_device") as e:
        train(cfg, tmp_path / "run", data_root)
    from runner.progress import short_error
    assert short_error(f"Traceback ...\nzoo.train.GPUOutOfMemoryError: {e.value}").startswith("zoo.train.GPUOutOfMemoryError: variant")


def test_bf16_precision_on_cpu(repo, data_root, tmp_path):
    """train.precision bf16: autocast where the CPU has bf16 instructions, fp32 elsewhere, and the
    run records which; weights and checkpoints stay fp32. auto is fp32 on a CPU, bf16 on a GPU."""
    from zoo.train import autocast_dtype, cpu_has_bf16
    cpu = torch.device("cpu")
    assert autocast_dtype("auto", cpu) is None and autocast_dtype("fp32", torch.device("cuda")) is None
    assert autocast_dtype("auto", torch.device("cuda")) is torch.bfloat16
    # auto on a GPU: TF32 below the width where bf16 autocast pays (an H100: 1.6x at d_model 256), bf16 from it
    assert autocast_dtype("auto", torch.device("cuda"), 256) is None
    assert autocast_dtype("auto", torch.device("cuda"), 512) is torch.bfloat16
    assert autocast_dtype("bf16", torch.device("cuda"), 256) is torch.bfloat16  # asked for: given
    assert autocast_dtype("bf16", cpu) is (torch.bfloat16 if cpu_has_bf16() else None)
    seen = []
    s = train(_smoke(repo, sets=["train.steps=10", "train.precision=bf16"]), tmp_path / "run", data_root,
              report=seen.append)
    assert s.hardware.compute_dtype == ("bf16" if cpu_has_bf16() else "fp32")
    losses = [m.loss for m in seen if getattr(m, "loss", None) is not None]
    assert math.isfinite(losses[-1]) and losses[-1] < losses[0]
    weights = load_checkpoint(checkpoints(tmp_path / "run")[-1])["model"]
    assert {v.dtype for v in weights.values() if v.is_floating_point()} == {torch.float32}
