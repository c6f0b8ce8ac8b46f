"""Corpus loading (train.txt / heldout.txt, or their .xz copies) and the byte-level BPE tokenizer."""
import lzma
import os

BOS, EOS = "<|bos|>", "<|eos|>"


def read_lines(corpus_dir, name):
    """Paragraph lines of name ('train' or 'heldout'): NAME.txt if present, else NAME.txt.xz."""
    plain = os.path.join(corpus_dir, f"{name}.txt")
    packed = plain + ".xz"
    if os.path.exists(plain):
        with open(plain, encoding="utf-8") as f:
            text = f.read()
    elif os.path.exists(packed):
        with lzma.open(packed, "rt", encoding="utf-8") as f:
            text = f.read()
    else:
        raise SystemExit(f"train: neither {plain} nor {packed} exists (run tools/corpus/build_corpus.sh)")
    lines = [line for line in text.split("\n") if line]
    if not lines:
        raise SystemExit(f"train: {name} corpus in {corpus_dir} is empty")
    return lines


def train_tokenizer(lines, vocab_size):
    """Byte-level BPE as GPT-2 does it: ByteLevel split (no prefix space), <|bos|>=0, <|eos|>=1."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=[BOS, EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(lines, trainer=trainer, length=len(lines))
    bos, eos = tokenizer.token_to_id(BOS), tokenizer.token_to_id(EOS)
    if (bos, eos) != (0, 1):
        raise SystemExit(f"train: special tokens got ids bos={bos} eos={eos}, expected 0 and 1")
    # encode(text) with add_special_tokens (the default) starts with <|bos|>, as training does.
    tokenizer.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", special_tokens=[(BOS, 0)])
    return tokenizer


def encode_stream(tokenizer, lines):
    """All lines as one id list, each paragraph followed by its newline."""
    ids = []
    for encoding in tokenizer.encode_batch([line + "\n" for line in lines], add_special_tokens=False):
        ids.extend(encoding.ids)
    return ids


def tokenizer_config(max_length):
    """tokenizer_config.json so AutoTokenizer loads tokenizer.json as a fast tokenizer."""
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": BOS,
        "eos_token": EOS,
        "add_bos_token": True,
        "clean_up_tokenization_spaces": False,
        "model_max_length": max_length,
    }
