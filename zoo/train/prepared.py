"""A trial prepared: its corpus encoded with its vocabularies (`prepare` -> `Prepared`), and its model over
them (`build`). Everything here is computed from the config and the data folder, so every rank prepares alike.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from zoo.config import Config
from zoo.data import EncodedCorpus, bpe_model, data_dir, encoded_corpus, load_pairs, load_sp
from zoo.errors import UserError
from zoo.model import Transformer, build_model, why_not_packed

__all__ = ["Prepared", "build", "check_kept", "prepare", "target_vocab", "training_batch"]  # what it lends outside its package (the door serves these)


@dataclass
class Prepared:
    sp_path: Path
    sp: object  # the loaded sentencepiece model of sp_path (the shared or source-side BPE)
    train: EncodedCorpus  # memory-mapped from the encoded cache; len() is the pair count
    dev: list  # [(src_ids, tgt_ids)]: small, kept as lists
    evals: dict  # split -> (sources, references): the spec's eval split first, then extra_splits
    likelihood: dict = field(default_factory=dict)  # split -> encoded pairs: the perplexity of each split but dev
    tgt_vocab: object = None  # the target side's own vocabulary (trees.SymbolVocab), None = shared BPE

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    @property
    def tgt_vocab_size(self) -> int | None:
        return None if self.tgt_vocab is None else self.tgt_vocab.get_piece_size()


def target_vocab(cfg: Config, root: Path | None = None):
    """The tree side's whole-symbol vocabulary (built from the training split) when the spec asks
    for one (data.target_vocab: symbols), else None: source and target share the BPE."""
    if cfg.data.target_vocab != "symbols":
        return None
    from zoo.data import SymbolVocab
    return SymbolVocab.from_targets((t for _, t in load_pairs(cfg.data.dataset, "train", data_dir(root))),
                                    tags=cfg.data.preterminals == "tags")


def prepare(cfg: Config, root: Path | None = None) -> Prepared:
    # here, not at the top: zoo.data.batching is the deepest of zoo.data's parts, and zoo.train.loop imports it
    from zoo.data import encode_pairs
    root = data_dir(root)
    name = cfg.data.dataset
    tgt_vocab = target_vocab(cfg, root)
    sp_path = bpe_model(name, cfg.data.vocab_size, root, source_only=tgt_vocab is not None)
    sp = load_sp(sp_path)
    # Encoded once per (corpus, BPE, max_len, max_train_pairs, target vocabulary), then memory-mapped.
    train = encoded_corpus(name, sp_path, root, cfg.data.max_len, cfg.data.max_train_pairs, tgt_vocab)
    if len(train.lengths) == 0:  # every pair was longer than data.max_len: nothing to train on
        raise UserError(f"data.max_len: {cfg.data.max_len} word-pieces leaves no training pair of {name} (all "
                        f"{train.dropped} are longer on one side); raise data.max_len (the paper's specs use 256)")
    dev_pairs = load_pairs(name, "dev", root)
    evals = {}
    for split in dict.fromkeys([cfg.eval.split, *cfg.eval.extra_splits]):
        pairs = dev_pairs if split == "dev" else load_pairs(name, split, root)
        pairs = pairs[: cfg.eval.max_sentences] if cfg.eval.max_sentences else pairs
        evals[split] = ([s for s, _ in pairs], [t for _, t in pairs])
    if cfg.eval.max_sentences:
        dev_pairs = dev_pairs[: max(cfg.eval.max_sentences * 4, 64)]
    likelihood = {}  # every scored split's per-sentence likelihood but dev's (dev_nll_stats has it)
    for split in dict.fromkeys([cfg.eval.split, *cfg.eval.extra_splits, *cfg.eval.ppl_splits]):
        if split != "dev":
            pairs = load_pairs(name, split, root)
            pairs = pairs[: cfg.eval.max_sentences] if cfg.eval.max_sentences else pairs
            likelihood[split] = encode_pairs(sp, pairs, cfg.data.max_len, tgt_vocab)
    return Prepared(sp_path, sp, train, encode_pairs(sp, dev_pairs, cfg.data.max_len, tgt_vocab), evals,
                    tgt_vocab=tgt_vocab, likelihood=likelihood)


def build(cfg: Config, sp, tgt_vocab=None) -> Transformer:
    """cfg's model over its vocabularies: sp the (source or shared) BPE, tgt_vocab the tree side's own."""
    model = build_model(cfg.model, sp.get_piece_size(), tgt_vocab and tgt_vocab.get_piece_size())
    if cfg.model.word_pointer:
        from zoo.data import word_pointer_tables
        model.set_word_pointer(*word_pointer_tables(sp, tgt_vocab))
    if cfg.train.pack == "on" and (why := why_not_packed(model)):
        raise UserError(f"train.pack: on lays several sentences to a row, but {why} (model.positional_encoding "
                        f"{cfg.model.positional_encoding}); set train.pack to off, or use sinusoidal or learned positions")
    return model


def training_batch(cfg: Config, pairs, indices) -> "Batch":
    """A training batch of the pairs at `indices` as the run lays it out: one pair a row, or packed (train.pack)."""
    from zoo.data import collate, pack  # here, not at the top: zoo.data.batching would lengthen the import chain
    return pack(pairs, indices) if cfg.train.pack == "on" else collate(pairs, indices)


def check_kept(cfg: Config, p: Prepared) -> None:
    """A data.max_len that drops most training pairs trains on a remnant (8 word-pieces keeps 15 of smoke's
    2000 multi30k pairs): refused, not run on silently. prepare() refuses one that keeps none."""
    kept, dropped = len(p.train.lengths), getattr(p.train, "dropped", 0)
    if dropped > kept:
        raise UserError(f"data.max_len: {cfg.data.max_len} word-pieces keeps {kept:,} of {kept + dropped:,} training "
                        f"pairs of {cfg.data.dataset} ({100 * kept / (kept + dropped):.1f}%; the others are longer on one "
                        "side), so the run would train on a remnant of its corpus; raise data.max_len (the paper's "
                        "specs use 256) until it keeps most of them")
