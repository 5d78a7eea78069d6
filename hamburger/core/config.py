"""Typed configuration of the grafted HAMburger modules, saved with every checkpoint."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from hamburger.errors import HamburgerError


def check_confidence(value: float, name: str = "confidence") -> float:
    """The knob's range, checked here only: a confidence is in (0, 1]; an error naming ``name`` otherwise."""
    if not 0.0 < value <= 1.0:
        raise HamburgerError(f"{name} must be in (0, 1], got {value!r}")
    return value


def check_full_heads(heads, base_config) -> list[tuple[int, int]]:
    """``heads`` ((layer, key/value head) pairs, `HamburgerConfig.full_heads`) sorted, each in range for the base's
    transformers config ``base_config``; duplicates refused."""
    layers, kv_heads = base_config.num_hidden_layers, base_config.num_key_value_heads
    out = []
    for pair in heads:
        if len(pair) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) for x in pair):
            raise HamburgerError(f"a full head is a [layer, key/value head] pair of integers, got {pair!r}")
        layer, head = pair
        if not (0 <= layer < layers and 0 <= head < kv_heads):
            raise HamburgerError(f"full head {[layer, head]} is out of range for a base of {layers} layers and "
                                 f"{kv_heads} key/value heads")
        out.append((layer, head))
    if len(set(out)) != len(out):
        raise HamburgerError(f"full heads repeat: {sorted(out)}")
    return sorted(out)


def derive_tap_layers(num_layers: int, num_taps: int) -> list[int]:
    """Evenly spaced base layers whose outputs feed the micro-step decoder (0-based module indices).

    ``num_taps`` layers split the depth into ``num_taps + 1`` equal parts; for 16 layers and 3 taps
    this gives the outputs of layers 4, 8 and 12 (indices 3, 7, 11). The final normed hidden state
    is always added as one more feature.
    """
    if num_taps < 0:
        raise HamburgerError("num_taps must be >= 0")
    taps = sorted({max(1, round(num_layers * i / (num_taps + 1))) for i in range(1, num_taps + 1)})
    return [t - 1 for t in taps if t < num_layers]


# Stop-head training labels. "group_end": stop at the last token of each data group. "accepted": also stop
# before a token the micro-step decoder gets wrong (teacher-forced), so that "continue" means "the next token
# will be the base's", the acceptance notion of speculative decoding; the confidence knob thresholds that.
STOP_TARGETS = ("group_end", "accepted")
# Where LoRA adapters of the base apply: "all" positions (folded into the weights for inference), only the
# "merged" slots (a slot holding a group of 2+ tokens), or every slot from a row's first merged slot on
# ("after_merge": the merged slots and the slots that read them, so the readers adapt too). With "merged" the base
# is untouched wherever nothing was merged (the prompt, single-token groups); with "after_merge" until the first
# merge. Either way confidence 1.0 (nothing merges) is the base model exactly, adapters and all.
# "merged_and_after": two adapter sets, one at the merged slots and one at the single-token slots from the row's first
# merge on: the slots that read a merge adapt too, without the merged slots' adapters (which cost the single slots 5
# points when "after_merge" switched them on there); its second set starts at zero, so a "merged" model continues
# exactly where it was.
# "after_fold": every slot a row feeds from its first fold on, in verify mode's token-keeping folds
# (`engine/folding.py`, keep first, last or none: no merged slot is fed, so the scopes above never act there); in
# layouts that feed merged slots the first merged slot starts it (as "after_merge"). Until a row's first fold its cache
# is the base's own, and so are its outputs: lossless verify (which never folds) stays the base exactly; the adapters
# only learn to read the folded history (`TrainConfig.verify_fold`; shipped as a checkpoint's fold reader,
# `checkpoint.add_fold_reader`).
LORA_SCOPES = ("all", "merged", "after_merge", "merged_and_after", "after_fold")
LORA_SETS = {"merged_and_after": 2}  # adapter sets a scope needs (1 unless named)
# What the confidence knob gates, for each micro token (2..max_steps of a group). "stop_head": the group goes on
# while the stop head's 1 - p_stop after its last token is >= confidence (decided before the MSD's next token
# exists). "token_prob": the MSD's next token joins the group only if the MSD gives it probability >= confidence
# (the stop head is not consulted; each group computes one micro step more, for the token it turns down). Either
# way confidence 1.0 makes every group one token: the base model exactly.
GATES = ("stop_head", "token_prob")
# `prefilter` (gate "token_prob" only): the MSD is asked for a group's next token only while the stop head's
# 1 - p_stop after the group's last token is >= prefilter x confidence. The stop head costs next to nothing; each
# question to the MSD costs a decoder pass and an LM head over the vocabulary. Where the stop head already knows the
# group ends, that work is skipped. Tied to the knob, the prefilter moves with it: a low knob still merges freely,
# where a fixed one would cap it. A prefilter can only turn merges down, never add one (every token still passes the
# MSD's test); 0 asks the MSD after every token.
# `single_tail` t: a fed group's last t tokens go into the base as their own one-token slots, after one merged slot of
# the rest (`packing.input_sizes`), so the next group's first token (the skip path) is read off a one-token slot: the
# base reads a token much better than a smashed group (see docs/method.md). The group is still one base forward (its
# slots share it), so tau is unchanged; the KV cache holds up to t + 1 slots per group instead of one. 0 is the
# paper's layout.
# `fold_tail` d (with a single tail): once d newer groups have been fed, a group that was fed as a merged head and a
# tail leaves the cache and comes back as one merged slot of all its tokens, in the same forward as the newest group's
# inputs. The tail's slots have done their job (the next group's first token was read off a one-token slot), so the
# cache holds one slot per group again but for the last d groups, and the older history reads as the paper's layout.
# Each forward feeds one slot more; tau is unchanged. 0: never fold (the single tail's layout).
# `msd_context` w: the MSD also reads the base's final states at the w slots before the one whose features it reads
# (oldest first, before the features; a row's first slot repeats where there are fewer), so that tokens 2.. see the
# recent context and not only one slot's taps. 0 is the paper's MSD.


def layout_name(single_tail: int, fold_tail: int = 0) -> str:
    """A slot layout in short: the single tail, then f and the fold delay when it folds ("0", "1", "1f", "1f2")."""
    fold = int(fold_tail)
    return f"{single_tail}" + ("" if not fold else "f" if fold == 1 else f"f{fold}")


def parse_layout(name: str) -> tuple[int, int]:
    """(single_tail, fold_tail) of a `layout_name` ("1f" is "1f1")."""
    tail, f, fold = name.strip().partition("f")
    try:
        return int(tail), (int(fold) if fold else 1) if f else 0
    except ValueError:
        raise HamburgerError(f"a layout is a single tail, then f and a fold delay (0, 1, 1f, 1f2), got {name!r}"
                             ) from None


@dataclass
class HamburgerConfig:
    """Sizes and knobs of the grafted modules. Derived fields are filled by `for_base`."""

    max_steps: int = 4  # largest group: tokens per base forward
    decoder_layers: int = 2  # depth of the micro-step decoder
    decoder_init: str = "copy_last"  # "copy_last": copy the base's last layers; "random": fresh init
    num_taps: int = 3  # intermediate base layers tapped as MSD features (plus the final normed state)
    tap_layers: list[int] = field(default_factory=list)  # derived from the base depth
    hidden_size: int = 0  # the base width (derived)
    merger_heads: int = 0  # heads of the compositional embedder's cross-attention (derived)
    slot_dim: int = 0  # width of the learned per-slot vectors (derived: hidden_size // 2)
    stop_hidden: int = 0  # hidden width of the stop head MLP (derived: hidden_size // 2)
    stop_sees_token: bool = True  # the stop head also reads the embedding of the token it judges
    stop_loss_weight: float = 0.5
    kl_weight: float = 0.0  # weight of KL(base || model) on every response token; 0 disables it
    token_loss_weight: float = 1.0  # weight of the cross-entropy on the data's tokens (0 with kl_weight > 0: pure KL)
    kl_mix: float = 0.0  # share of reverse KL(model || base) in the KL term (0: forward KL(base || model) only)
    stop_target: str = "group_end"  # training label of the stop head, see STOP_TARGETS
    lora_scope: str = "all"  # where the base's LoRA adapters (if any) apply, see LORA_SCOPES
    default_confidence: float = 0.9  # generation knob used when a request gives none
    gate: str = "stop_head"  # what the knob thresholds, see GATES
    prefilter: float = 0.0  # gate token_prob: ask the MSD only while the stop head's 1 - p_stop >= this x the knob
    micro_lookup: float = 0.0  # a greedy micro step takes the answer's own continuation (the token after the latest
    #                            earlier occurrence of its last 3 tokens) where the MSD gives it >= this (0: never)
    micro_lookup_continues: bool = False  # with micro_lookup: a group the stop head would end goes on where the answer
    #                                       has such a continuation, and only that copy may join it
    single_tail: int = 0  # tokens at the end of each fed group that take their own slot, see above
    fold_tail: int = 0  # with single_tail: fold a split group into one merged slot d groups later, see above
    msd_context: int = 0  # earlier slots whose final base states the MSD reads before its features, see above
    # verify_fold: the base's [layer, key/value head] pairs that keep all slots a fold takes out (`engine/full_heads`)
    full_heads: list[list[int]] = field(default_factory=list)

    @property
    def reads_merge_history(self) -> bool:
        """Whether the adapters at a slot depend on the row's earlier merges (the engine then keeps a flag per row)."""
        return self.lora_scope in ("after_merge", "merged_and_after", "after_fold")

    @property
    def reads_fold_history(self) -> bool:
        """Whether a row's first fold (a token-keeping one too) switches its adapters on (``after_fold``)."""
        return self.lora_scope == "after_fold"

    @property
    def lora_sets(self) -> int:
        return LORA_SETS.get(self.lora_scope, 1)

    @property
    def num_features(self) -> int:
        """Vectors the MSD reads before a group's tokens: the context slots' final states, then the taps and final."""
        return self.msd_context + len(self.tap_layers) + 1

    def validate(self) -> "HamburgerConfig":
        if self.max_steps < 1:
            raise HamburgerError("max_steps must be >= 1")
        if self.decoder_layers < 1:
            raise HamburgerError("decoder_layers must be >= 1")
        if self.decoder_init not in ("copy_last", "random"):
            raise HamburgerError("decoder_init must be 'copy_last' or 'random'")
        if self.stop_target not in STOP_TARGETS:
            raise HamburgerError(f"stop_target must be one of {STOP_TARGETS}, got {self.stop_target!r}")
        if self.lora_scope not in LORA_SCOPES:
            raise HamburgerError(f"lora_scope must be one of {LORA_SCOPES}, got {self.lora_scope!r}")
        check_confidence(self.default_confidence, "default_confidence")
        if self.gate not in GATES:
            raise HamburgerError(f"gate must be one of {GATES}, got {self.gate!r}")
        if not 0.0 <= self.micro_lookup <= 1.0:
            raise HamburgerError(f"micro_lookup must be in [0, 1], got {self.micro_lookup!r}")
        if self.micro_lookup_continues and not self.micro_lookup > 0:
            raise HamburgerError("micro_lookup_continues needs micro_lookup > 0")
        if not 0 <= self.single_tail < self.max_steps:
            raise HamburgerError(f"single_tail must be in 0..max_steps - 1 ({self.max_steps - 1}), got {self.single_tail!r}")
        self.fold_tail = int(self.fold_tail)  # (saved as true before it counted groups: 1)
        if self.fold_tail < 0 or (self.fold_tail and (not self.single_tail or self.msd_context)):
            raise HamburgerError(f"fold_tail must be >= 0 and needs single_tail >= 1 and msd_context 0 (it folds the "
                                 f"tail's slots away), got {self.fold_tail!r}")
        if self.msd_context < 0:
            raise HamburgerError(f"msd_context must be >= 0, got {self.msd_context!r}")
        for name in ("stop_loss_weight", "kl_weight", "token_loss_weight"):
            if getattr(self, name) < 0:
                raise HamburgerError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if not 0.0 <= self.kl_mix <= 1.0:
            raise HamburgerError(f"kl_mix must be in [0, 1], got {self.kl_mix!r}")
        if not 0.0 <= self.prefilter <= 1.0:
            raise HamburgerError(f"prefilter must be in [0, 1], got {self.prefilter!r}")
        if self.hidden_size and self.merger_heads and self.hidden_size % self.merger_heads:
            raise HamburgerError(f"merger_heads={self.merger_heads} does not divide hidden_size={self.hidden_size}")
        return self

    def for_base(self, base_config) -> "HamburgerConfig":
        """Fill derived fields from a transformers config of the base model."""
        text = base_config.get_text_config() if hasattr(base_config, "get_text_config") else base_config
        d = text.hidden_size
        if not self.tap_layers:
            self.tap_layers = derive_tap_layers(text.num_hidden_layers, self.num_taps)
        self.num_taps = len(self.tap_layers)
        if max(self.tap_layers, default=0) >= text.num_hidden_layers:
            raise HamburgerError(f"tap layer out of range for a {text.num_hidden_layers}-layer base")
        if self.hidden_size and self.hidden_size != d:
            raise HamburgerError(f"config made for hidden size {self.hidden_size}, base has {d}")
        self.hidden_size = d
        self.merger_heads = self.merger_heads or text.num_attention_heads
        self.slot_dim = self.slot_dim or d // 2
        self.stop_hidden = self.stop_hidden or d // 2
        self.full_heads = [list(pair) for pair in check_full_heads(self.full_heads, text)]
        return self.validate()

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "HamburgerConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise HamburgerError(f"unknown HAMburger config fields: {sorted(unknown)}")
        data = {"stop_sees_token": False, **data}  # saved before the field existed: a hidden-only stop head
        return cls(**data).validate()
