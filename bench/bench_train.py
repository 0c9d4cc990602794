"""Training throughput: zoo's compiled Transformer vs torch.nn.Transformer of the same size.

Same data (Multi30k, 8000 BPE, 4000-token batches), same loss, optimizer and loop; the two models
alternate in rounds so machine noise hits both alike. Prints target tokens/s and the ratio.

    ZOO_DATA_DIR=../shared/data .venv/bin/python bench/bench_train.py [--rounds 4 --steps 5]
"""
from __future__ import annotations

import argparse
import math
import time

import torch
from torch import nn

from zoo import data as zdata
from zoo.model import build_model
from zoo.spec import ModelSpec
from zoo.train import smoothed_loss


class TorchReference(nn.Module):
    """nn.Transformer with the same shared embedding, scaling, positions and tied pre-softmax."""

    def __init__(self, m: ModelSpec, vocab: int):
        super().__init__()
        self.d = m.d_model
        self.embed = nn.Embedding(vocab, m.d_model)
        self.register_buffer("pe", build_model(m, 8).pe.clone(), persistent=False)
        self.drop = nn.Dropout(m.dropout)
        self.core = nn.Transformer(m.d_model, m.h, m.N, m.N, m.d_ff, m.dropout, batch_first=True)

    def forward(self, src, tgt):
        e = lambda x: self.drop(self.embed(x) * math.sqrt(self.d) + self.pe[: x.size(1)])
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
        y = self.core(e(src), e(tgt), tgt_mask=causal, src_key_padding_mask=src == 0,
                      memory_key_padding_mask=src == 0, tgt_is_causal=True)
        return y @ self.embed.weight.t()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--steps", type=int, default=5, help="steps per model per round")
    ap.add_argument("--batch-tokens", type=int, default=4000)
    args = ap.parse_args()
    m = ModelSpec(N=3, d_model=256, d_ff=1024, h=8, d_k=32, d_v=32, dropout=0.1)
    root = zdata.data_dir()
    sp = zdata.load_sp(zdata.bpe_model("multi30k", 8000, root))
    pairs = zdata.encode_pairs(sp, zdata.load_pairs("multi30k", "train", root), 128)
    batches = zdata.make_batches(zdata.pair_lengths(pairs), args.batch_tokens, 1, 0)
    torch.manual_seed(0)
    models = {"zoo": build_model(m, 8000), "nn.Transformer": TorchReference(m, 8000)}
    opts = {k: torch.optim.Adam(v.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9) for k, v in models.items()}
    tokens = {k: 0 for k in models}
    seconds = {k: 0.0 for k in models}
    i = 0
    for r in range(args.rounds + 1):  # round 0 warms up and is not counted
        for name, model in models.items():
            model.train()
            t = time.perf_counter()
            n = 0
            for s in range(args.steps):
                b = zdata.collate(pairs, batches[(i + s) % len(batches)])
                loss, _ = smoothed_loss(model(b.src, b.tgt_in), b.tgt_out, 0.1)
                opts[name].zero_grad()
                (loss / b.n_tgt_tokens).backward()
                opts[name].step()
                n += b.n_tgt_tokens
            if r:
                seconds[name] += time.perf_counter() - t
                tokens[name] += n
        i += args.steps
    tps = {k: tokens[k] / seconds[k] for k in models}
    print(f"threads {torch.get_num_threads()}, d_model 256, 3+3 layers, vocab 8000, {args.batch_tokens}-token batches, "
          f"{args.rounds} rounds x {args.steps} steps each")
    for k, v in tps.items():
        print(f"  {k:<15} {v:8.0f} target tokens/s")
    print(f"ratio zoo / nn.Transformer: {tps['zoo'] / tps['nn.Transformer']:.2f}")


if __name__ == "__main__":
    main()
