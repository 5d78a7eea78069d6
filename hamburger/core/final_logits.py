"""What a base's causal LM does to its LM head's output before it returns logits, found and checked on the base.

Most families return the head's output as it is. Some do more after the head:
* Granite and MiniCPM3 divide by ``logits_scaling`` (MiniCPM3 divides the hidden state first, the same for a head
  without bias), and HyperCLOVAX multiplies by it;
* Cohere multiplies by ``logit_scale``;
* Gemma 2 caps them at ``final_logit_softcapping``, ``cap * tanh(x / cap)``.

The engine and the trainer read the head themselves (fewer rows, a draft vocabulary, losses by chunks), so they
must do the same, or sampling, verify's acceptance, the stop rule and every loss see other distributions than the
base's (greedy decoding alone would not notice a scale). `FinalLogits.of` does not trust the attribute names: it
runs the base once on a few tokens, keeps the scale among the config's candidates that gives the base's own logits,
and refuses a base whose logits none of them gives.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from hamburger.core.lora import adapters_disabled
from hamburger.core.modules import base_decoder_stack
from hamburger.errors import HamburgerError

# config attributes whose value (or its inverse) a family multiplies its logits by
SCALE_ATTRIBUTES = ("logits_scaling", "logit_scale", "output_multiplier")
CHECK_TOLERANCE = 1e-2  # of the logits' largest magnitude: rounding passes, a missed scale or cap does not


@dataclass(frozen=True)
class FinalLogits:
    """What the causal LM returns for its head's output ``x``: ``cap * tanh(scale * x / cap)``, or ``scale * x``."""

    scale: float = 1.0
    cap: float | None = None

    def __call__(self, head_output: torch.Tensor) -> torch.Tensor:
        x = head_output if self.scale == 1.0 else head_output * self.scale
        return x if self.cap is None else torch.tanh(x / self.cap) * self.cap

    @classmethod
    def of(cls, base: nn.Module) -> "FinalLogits":
        """The transform of ``base`` (a HF causal LM with a Llama-style stack), checked on one short forward. A base on
        the meta device has no values to run: its cap alone (no scale), unchecked."""
        config = base.config.get_text_config()
        cap = getattr(config, "final_logit_softcapping", None) or None
        param = next(base.parameters())
        if param.device.type == "meta":
            return cls(1.0, cap)
        values = [float(v) for v in (getattr(config, name, None) for name in SCALE_ATTRIBUTES)
                  if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 and v != 1]
        candidates = [cls(s, cap) for s in dict.fromkeys([*values, *(1 / v for v in values), 1.0])]
        ids = torch.arange(min(6, config.vocab_size), device=param.device)[None]
        training, _ = base.training, base.eval()  # (no dropout in the check)
        try:
            with torch.no_grad(), adapters_disabled(base):
                expected = base(input_ids=ids).logits.float()
                head_output = base.get_output_embeddings()(base_decoder_stack(base)(input_ids=ids).last_hidden_state)
        finally:
            base.train(training)
        if head_output.shape != expected.shape:
            raise HamburgerError(f"{type(base).__name__}: its logits ({tuple(expected.shape)}) are not its LM head's "
                                 f"output ({tuple(head_output.shape)}); HAMburger reads the head itself")
        tolerance = CHECK_TOLERANCE * max(float(expected.abs().max()), 1e-6)
        for candidate in candidates:
            if float((candidate(head_output).float() - expected).abs().max()) <= tolerance:
                return candidate
        raise HamburgerError(f"{type(base).__name__}: its causal LM changes its LM head's output in a way HAMburger "
                             f"does not know (tried scales {[round(c.scale, 6) for c in candidates]}"
                             f"{'' if cap is None else f' and the cap {cap}'}); the engine reads the head itself, so "
                             f"its logits would not be the base's")
