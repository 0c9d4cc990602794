"""The token ids every vocabulary reserves: the BPE models are trained with them (zoo.data.bpe), the model
pads with PAD, decoding starts at BOS and stops at EOS. A fact on the ground floor, importing nothing."""
PAD, UNK, BOS, EOS = 0, 1, 2, 3
