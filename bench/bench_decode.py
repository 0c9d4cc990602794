"""Beam search with the incremental key/value cache vs recomputing the whole prefix every step.

A base-like model (d_model 256, 3+3 layers, vocabulary 8000, random weights) decodes a batch of
random sources with beam 4. Every hypothesis is forced to exactly --out-len tokens (eos banned
before that through min_len, max length = source length + offset = out-len), so both searches do
the same number of steps and must return the same tokens.

The recomputing reference is timed twice: through model.decode as it is (logits for every prefix
position, which is what the API offers) and with only the last position projected to the
vocabulary (the fairer baseline: the decoder stack alone is recomputed).

    .venv/bin/python bench/bench_decode.py [--batch 32] [--src-len 20] [--out-len 50] [--beam 4]
                                           [--threads N] [--set norm_position=pre ...]

On a CPU that other jobs keep busy, use --threads 1: the cached search runs many small ops, and
intra-op threads fighting for busy cores stall them (measured here: 2 threads ~10x slower).
"""
import argparse
import time
import types

import torch

from zoo.model import beam_search, beam_search_nocache
from zoo.model import build_model
from zoo.config import ModelSpec


def decode_last_only(self, tgt_in, memory, src_mask, cache=None):
    """model.decode without a cache, projecting only the last position to the vocabulary."""
    y = self._embed(self.tgt_embed, tgt_in)
    for layer in self.decoder:
        y = layer(y, memory, src_mask, None, self.pos_embed)
    y = y[:, -1:]
    return self.logits(y if self.dec_norm is None else self.dec_norm(y))  # pre-LN's final norm, as model.decode


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--src-len", type=int, default=20)
    ap.add_argument("--out-len", type=int, default=50)
    ap.add_argument("--beam", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="a model field of the decoded model, e.g. norm_position=pre or positional_encoding=rope")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    fields = {k: int(v) if v.isdigit() else v for k, v in (kv.split("=", 1) for kv in args.set)}
    spec = ModelSpec(**{"N": 3, "d_model": 256, "d_ff": 1024, "h": 4, "d_k": 64, "d_v": 64, "dropout": 0.1, **fields})
    model = build_model(spec, args.vocab).eval()
    src = torch.randint(4, args.vocab, (args.batch, args.src_len))
    kw = dict(beam_size=args.beam, alpha=0.6, max_len_offset=args.out_len - args.src_len,
              min_len=args.out_len)
    print(f"model: d_model 256, N 3+3, h 4, d_ff 1024, vocab {args.vocab}; batch {args.batch} x "
          f"source {args.src_len}, beam {args.beam}, output forced to {args.out_len} tokens; "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads")

    beam_search(model, src[:2], **{**kw, "max_len_offset": 2, "min_len": 0})  # warm-up
    t_cache, out_cache = timed(lambda: beam_search(model, src, **kw))
    t_full, out_full = timed(lambda: beam_search_nocache(model, src, **kw))
    model.decode = types.MethodType(decode_last_only, model)
    t_last, out_last = timed(lambda: beam_search_nocache(model, src, **kw))
    assert all(len(y) == args.out_len for y in out_cache)
    same = out_cache == out_full == out_last

    n_tok = args.batch * args.out_len
    print(f"cached (key/value cache)        {t_cache:8.2f} s  {n_tok / t_cache:8.1f} output tokens/s")
    print(f"recompute prefix, all logits    {t_full:8.2f} s  {n_tok / t_full:8.1f} output tokens/s  "
          f"cached is {t_full / t_cache:.1f}x faster")
    print(f"recompute prefix, last logits   {t_last:8.2f} s  {n_tok / t_last:8.1f} output tokens/s  "
          f"cached is {t_last / t_cache:.1f}x faster")
    print(f"identical outputs: {same}")


if __name__ == "__main__":
    main()
