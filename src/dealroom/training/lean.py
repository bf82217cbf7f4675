"""SFT that fits whole negotiations in a few GB: project only the trained positions, and give
freed memory back.

Two costs dominate the resident memory of an SFT step on a 20,000-token negotiation once
gradient checkpointing is on (measured on the demo model, docs/training.md):

- TRL's fused LM head scores every position of the sequence on a device without Triton (the
  CPU), ignored labels included, and kept about 1 MB per token for its backward pass here:
  3.8 GB more at 4,096 tokens, most of a whole negotiation's budget.
  Only the model's own turns are trained (about 7% of a whole negotiation's tokens), so
  ``LeanSFTTrainer`` asks the model for the logits of those positions alone
  (transformers' ``logits_to_keep`` with their indices) and takes the cross-entropy there: the
  same loss, normalised the same way (by ``num_items_in_batch`` when the trainer passes it).
- glibc's allocator keeps freed blocks whose size it has learnt to serve from its heap (its
  mmap threshold grows with every large block freed); checkpointing frees and reallocates every
  layer's activations, and the peak doubled (3.5 GB instead of 1.7 GB at 4,096 tokens).
  ``release_freed_memory`` pins the threshold, so large blocks are mapped and unmapped.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any

from dealroom.training.models import lib

M_MMAP_THRESHOLD = -3
"""glibc's ``mallopt`` parameter number (malloc.h)."""
MMAP_THRESHOLD_BYTES = 64 * 1024


def release_freed_memory() -> bool:
    """Pin glibc's mmap threshold (blocks over 64 KiB are unmapped when freed); False when the
    C library is not glibc (nothing changes)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(ctypes.c_int(M_MMAP_THRESHOLD), ctypes.c_int(MMAP_THRESHOLD_BYTES)))


def trained_positions(labels: Any) -> Any:
    """Indices of the positions whose next token is trained in any row of the batch."""
    return (labels[:, 1:] != -100).any(dim=0).nonzero().squeeze(-1)


def lean_loss(model: Any, inputs: dict[str, Any], num_items_in_batch: Any = None) -> Any:
    """Cross-entropy of ``model`` on ``inputs["labels"]``, projecting only trained positions.

    Returns ``(loss, correct, counted)``: the loss, and the next-token hits and count behind
    the token accuracy.
    """
    torch = lib("torch")
    labels = inputs["labels"]
    keep = trained_positions(labels)
    forward = {k: v for k, v in inputs.items() if k != "labels"}
    outputs = model(**forward, use_cache=False, logits_to_keep=keep)
    logits = outputs.logits.float()
    targets = labels[:, 1:][:, keep]
    flat = logits.reshape(-1, logits.shape[-1])
    total = torch.nn.functional.cross_entropy(
        flat, targets.reshape(-1), ignore_index=-100, reduction="sum"
    )
    valid = targets != -100
    counted = valid.sum()
    denominator = counted if num_items_in_batch is None else num_items_in_batch
    loss = total / torch.as_tensor(denominator, device=total.device).clamp(min=1)
    with torch.no_grad():
        correct = ((logits.argmax(dim=-1) == targets) & valid).sum()
    return loss, correct, counted


def lean_sft_trainer() -> type:
    """``trl.SFTTrainer`` with ``lean_loss`` as its training loss (TRL's metrics kept:
    ``mean_token_accuracy`` and ``num_tokens``)."""
    trl = lib("trl")

    class LeanSFTTrainer(trl.SFTTrainer):
        def compute_loss(
            self,
            model: Any,
            inputs: dict[str, Any],
            return_outputs: bool = False,
            num_items_in_batch: Any = None,
        ) -> Any:
            if return_outputs:  # evaluation asking for logits: TRL's own path
                sft_trainer: Any = super()  # trl.SFTTrainer, reached through lib(): untyped
                return sft_trainer.compute_loss(model, inputs, True, num_items_in_batch)
            loss, correct, counted = lean_loss(model, inputs, num_items_in_batch)
            metrics = getattr(self, "_metrics", None)
            if metrics is not None:
                mode = "train" if model.training else "eval"
                metrics[mode]["mean_token_accuracy"].append(
                    (correct / counted).item() if counted > 0 else 0.0
                )
                if mode == "train" and "attention_mask" in inputs:
                    seen = getattr(self, "_total_train_tokens", 0)
                    seen += int(inputs["attention_mask"].sum().item())
                    self._total_train_tokens = seen
                    metrics[mode]["num_tokens"] = [seen]
            return loss

    return LeanSFTTrainer
