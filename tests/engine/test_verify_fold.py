"""Verify mode with folding (`VerifyGeneration(fold=d)`): the base keeps its own choices among the MSD's drafts, and
the tokens one forward kept in the cache come back as one merged slot d forwards later."""

import pytest
import torch

from hamburger.core.checkpoint import read_meta
from hamburger.core.loading import DEFAULT_MODEL_DIR
from hamburger.core.lora import adapters_disabled, lora_modules
from hamburger.data.segment import SegmentSettings
from hamburger.engine import cache as cache_module
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.folding import DEFAULT_FOLD, READER_FOLD, Folding, FoldState, parse_folding
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.verify import VerifyGeneration
from hamburger.errors import HamburgerError
from tests.helpers import PROMPTS, hf_greedy, save_tiny_lora, tiny_base, tiny_hamburger
from tests.verify_helpers import (FOLDINGS, drafting_model, fed_groups,
                                  fold_schedule, folded_reference_logits, folding_model)


@pytest.mark.parametrize("name, family, scope", [(name, family, None) for name in FOLDINGS
                                                  for family in ("llama", "qwen2")]
                         + [("segments 6", "llama", "merged"), ("segments 6", "llama", "merged_and_after")]
                         + [(name, "llama", "after_fold") for name in (
                             "segments 6", "segments 6, keep last", "segments 2, keep first", "segments 2, keep none")])
def test_logits_are_the_folded_layouts(name, family, scope, char_tokenizer):
    """Scoped adapters too: at merged slots only, or (``merged_and_after``) a second set at every slot fed after the
    row's first fold, which the reference gates by the same rule on its slots in feeding order; ``after_fold``: one set
    at every slot fed from the forward that first folds the row on, token-keeping folds included."""
    model, folding = folding_model(family, scope), FOLDINGS[name]
    folded = longest = 0
    for prompt in PROMPTS:
        run = VerifyGeneration(model, char_tokenizer, [prompt], DecodingConfig(max_new_tokens=40, confidence=0.2,
                                                                             ignore_eos=True), fold=folding,
                               trace_logits=True)
        res = run.run()[0]
        fed, traced = fed_groups(res), torch.stack(run.logits[0])
        assert sum(fed) == res.tokens - 1  # every token but the last was fed
        schedule = fold_schedule(folding, model.base.config.vocab_size, traced, fed)
        want = folded_reference_logits(model, prompt, res.token_ids, fed, schedule, folding.keep)
        torch.testing.assert_close(traced, want, rtol=1e-4, atol=1e-4)
        assert res.token_ids == want.argmax(-1).tolist()  # greedy: every token is the base's choice on that cache
        folded += sum(map(len, schedule))
        longest = max([longest] + [e - s for groups in schedule for s, e in groups])
        # the cache: the prompt, every fed token, less what the folds took out (a group leaves one slot, keep none none:
        # every token of it leaves)
        left = sum(e - s - (folding.keep != "none") for groups in schedule for s, e in groups)
        assert res.kv_slots == len(prompt) + sum(fed) - left
    assert folded > 4, "the test needs folded groups"
    assert longest == folding.segments.max_steps or folding.groups == "forwards", "the test needs the longest groups"


@pytest.mark.parametrize("keep", ["first", "last", "none"])
def test_sampled_tokens_the_base_did_not_rank_first_keep_their_slots(keep, char_tokenizer):
    """``offtop``: sampled, every answer token its distribution did not rank first stays in its slot when its group
    folds (the engine's logits are the layout with those slots kept); greedy, there are none, so the fold is the
    same as without it, token for token."""
    model = folding_model("llama")
    folding = Folding(window=2, keep=keep, offtop=True,
                      segments=SegmentSettings(strategy="decreasing", ratio=1.03, max_steps=6))
    plain = Folding(window=2, keep=keep, segments=folding.segments)
    stayed = 0
    for seed, prompt in enumerate(PROMPTS):
        cfg = DecodingConfig(max_new_tokens=40, confidence=0.2, temperature=1.5, seed=seed, ignore_eos=True)
        run = VerifyGeneration(model, char_tokenizer, [prompt], cfg, fold=folding, trace_logits=True)
        res = run.run()[0]
        fed, traced = fed_groups(res), torch.stack(run.logits[0])
        offtop = frozenset(i for i, (t, u) in enumerate(zip(res.token_ids, traced.argmax(-1).tolist())) if t != u)
        schedule = fold_schedule(folding, model.base.config.vocab_size, traced, fed, offtop)
        want = folded_reference_logits(model, prompt, res.token_ids, fed, schedule, keep, stay=offtop)
        torch.testing.assert_close(traced, want, rtol=1e-4, atol=1e-4)
        left = sum(len(set(range(s + (keep == "first"), e - (keep == "last"))) - offtop)
                   for groups in schedule for s, e in groups)
        assert res.kv_slots == len(prompt) + sum(fed) - left
        stayed += sum(i in offtop for groups in schedule for s, e in groups
                      for i in range(s + (keep == "first"), e - (keep == "last")))
        greedy = DecodingConfig(max_new_tokens=40, confidence=0.2, ignore_eos=True)
        a, b = (VerifyGeneration(model, char_tokenizer, [prompt], greedy, fold=f).run()[0] for f in (folding, plain))
        assert (a.token_ids, a.accepted, a.kv_slots) == (b.token_ids, b.accepted, b.kv_slots)
    assert stayed > 3, "the test needs off-top tokens in folded groups"


def test_forwards_that_keep_more_than_a_group_fold_in_pieces(char_tokenizer):
    """Six drafts per forward: a forward can keep 7 tokens, folded as groups of at most max_steps (4 and 3)."""
    model, folding = folding_model(), FOLDINGS["forwards 0"]
    run = VerifyGeneration(model, char_tokenizer, [PROMPTS[0]], DecodingConfig(max_new_tokens=30, ignore_eos=True),
                           draft=6, fold=folding, trace_logits=True)
    res = run.run()[0]
    fed, traced = fed_groups(res), torch.stack(run.logits[0])
    assert max(fed) == 7
    schedule = fold_schedule(folding, model.base.config.vocab_size, traced, fed)
    assert {e - s for groups in schedule for s, e in groups} == {3, 4}
    torch.testing.assert_close(traced, folded_reference_logits(model, PROMPTS[0], res.token_ids, fed, schedule),
                               rtol=1e-4, atol=1e-4)


def test_kv_bytes_follow_the_slots(char_tokenizer):
    model = drafting_model("llama")
    res = VerifyGeneration(model, char_tokenizer, [PROMPTS[0]], DecodingConfig(max_new_tokens=40, confidence=0.2),
                           fold=FOLDINGS["forwards 0"]).run()[0]
    assert res.kv_slots < res.kv_slots_ordinary
    assert res.kv_bytes * res.kv_slots_ordinary == res.kv_bytes_ordinary * res.kv_slots


def test_no_fold_before_the_answer_ends_is_plain_verify(char_tokenizer):
    """Folding later than the answer lasts changes nothing: the output is the base's greedy output, token for token."""
    model = drafting_model("llama")
    for prompt in PROMPTS:
        res = VerifyGeneration(model, char_tokenizer, [prompt], DecodingConfig(max_new_tokens=30, confidence=0.2),
                               fold=Folding(window=30)).run()[0]
        assert res.token_ids == hf_greedy(model.base, prompt, 30)
        assert res.kv_slots == res.kv_slots_ordinary and sum(res.accepted) > 0


def test_after_fold_adapters_leave_lossless_verify_and_the_answer_before_the_first_fold_to_the_base(char_tokenizer):
    """``lora_scope: after_fold``: verify without folding never switches the adapters on (the base's greedy output,
    token for token), and with folding every token before the row's first fold is still the base's; after it the
    adapters read the folded history (the reading itself: `test_logits_are_the_folded_layouts`)."""
    model, folding = folding_model("llama", "after_fold"), FOLDINGS["segments 2, keep first"]
    with torch.no_grad():  # (adapters strong enough to change the tiny base's choices)
        for _, module in lora_modules(model.base):
            module.lora_B.mul_(5.0)
    changed = False
    for prompt in PROMPTS:
        with adapters_disabled(model.base):
            base = hf_greedy(model.base, prompt, 40)
        cfg = DecodingConfig(max_new_tokens=40, confidence=0.2, ignore_eos=True)
        assert VerifyGeneration(model, char_tokenizer, [prompt], cfg).run()[0].token_ids == base
        run = VerifyGeneration(model, char_tokenizer, [prompt], cfg, fold=folding, trace_logits=True)
        res = run.run()[0]
        schedule = fold_schedule(folding, model.base.config.vocab_size, torch.stack(run.logits[0]), fed_groups(res))
        first = next(s for s, groups in enumerate(schedule) if groups)  # the forward that first folds
        before = 1 + sum(fed_groups(res)[:first])  # tokens chosen before it (the pending one's included)
        assert res.token_ids[:before] == base[:before]
        changed |= res.token_ids != base
    assert changed, "the test needs folds that change the answer"


@pytest.mark.parametrize("compact_at", [0.0, 0.25, 2.0])
@pytest.mark.parametrize("name", ["forwards 0", "segments 6", "segments 6, keep last"])
def test_ragged_batch_equals_single_runs(compact_at, name, char_tokenizer, monkeypatch):
    """Rows fold at different forwards, keep different numbers of drafts and end at different lengths (the cache
    compacted always, when holes pile up, never): each row gives what it gives alone."""
    monkeypatch.setattr(cache_module, "COMPACT_AT", compact_at)
    model = folding_model("llama")
    torch.manual_seed(0)
    with torch.no_grad():  # row 1: every draft wrong; row 2: every draft right; row 3: some of each
        for p in model.decoder.parameters():
            p.add_(0.05 * torch.randn_like(p))
    cfgs = [DecodingConfig(max_new_tokens=n, confidence=0.2) for n in (40, 13, 29)]
    batch = VerifyGeneration(model, char_tokenizer, PROMPTS, cfgs, fold=FOLDINGS[name]).run()
    for prompt, cfg, res in zip(PROMPTS, cfgs, batch):
        alone = VerifyGeneration(model, char_tokenizer, [prompt], cfg, fold=FOLDINGS[name]).run()[0]
        assert (res.token_ids, res.accepted, res.kv_slots) == (alone.token_ids, alone.accepted, alone.kv_slots)
        assert res.tokens == cfg.max_new_tokens
    assert any(a < d for r in batch for a, d in zip(r.accepted, r.drafts)), "the test needs rejections"
    assert sum(r.kv_slots < r.kv_slots_ordinary for r in batch) >= 2, "the test needs folds"
    assert len({tuple(r.accepted[:5]) for r in batch}) > 1


def test_sampling_with_a_seed_is_reproducible(char_tokenizer):
    model = drafting_model("llama")
    cfg = DecodingConfig(max_new_tokens=30, confidence=0.2, temperature=0.9, seed=7,
                         ignore_eos=True)  # (30 tokens whatever the draws)
    runs = [VerifyGeneration(model, char_tokenizer, [PROMPTS[0]], cfg, fold=Folding(window=2)).run()[0]
            for _ in range(2)]
    assert runs[0].token_ids == runs[1].token_ids and len(runs[0].token_ids) == 30


def test_bad_folding_is_refused(char_tokenizer):
    model, cfg = drafting_model("llama"), DecodingConfig()
    for folding, match in [(Folding(window=-1), "window"), (Folding(groups="tokens"), "groups"),
                           (Folding(segments=SegmentSettings(strategy="nope")), "strategy"),
                           (Folding(share=1.0), "share"), (Folding(share=-0.1), "share"),
                           (Folding(kv=1.0), "budget"), (Folding(kv=-0.5), "budget"),
                           (Folding(keep="mean"), "keeps"), (parse_folding("segments:8:p=1"), "confidence"),
                           (parse_folding("segments:8:offtop"), "offtop"),
                           (parse_folding("segments:8:steps=0"), "steps"),
                           (Folding(segments=SegmentSettings(max_steps=5)), "at most 4")]:
        with pytest.raises(HamburgerError, match=match):
            VerifyGeneration(model, char_tokenizer, [PROMPTS[0]], cfg, fold=folding)
    with pytest.raises(HamburgerError, match="msd_context"):
        VerifyGeneration(tiny_hamburger("llama", msd_context=2), char_tokenizer, [PROMPTS[0]], cfg, fold=Folding())


def test_due_groups_by_hand():
    """Forwards: each forward's kept tokens, once `window` tokens follow them; segments: the entropy cut's final
    groups (all but the last), once `window` tokens follow them; one-token groups stay single slots."""
    state = FoldState(Folding(window=2, groups="forwards"), 100)
    for start, end in [(0, 3), (3, 4), (4, 6), (6, 8)]:  # (forwards of more than 4 tokens: the test above)
        state.fed(start, end)
    assert state.due(4) == []  # (0, 3) is followed by one token only
    assert state.due(5) == [(0, 3)]
    assert state.due(8) == [(4, 6)]  # (3, 4) holds one token: it stays, decided
    assert state.decided == 6 and state.due(8) == []
    segments = FoldState(Folding(window=1, segments=SegmentSettings(strategy="sliding", sliding_p=0.5)), 100)
    high = 10.0  # above H(0.5): starts a group
    segments.entropies = [high, 0.1, 0.1, high, 0.1, high, high, 0.1]  # cut: 3, 2, 1, 2
    assert segments.due(3) == []  # (0, 3) is the whole cut of the first 3 tokens: it may still grow
    assert segments.due(4) == [(0, 3)]  # final, and one token (the window) follows it
    assert segments.due(5) == []  # (3, 5) may still grow
    assert segments.due(6) == [(3, 5)]
    assert segments.due(8) == [] and segments.decided == 6  # (5, 6) is one token; (6, 8) is the cut's last group


def test_a_growing_window_keeps_a_share_of_the_answer_unfolded():
    """``share``: the window is that share of the fed answer tokens when more than ``window``, so groups fold later
    as the answer grows; the spec's optional third field."""
    folding = parse_folding("forwards:2:0.5")
    assert folding == Folding(window=2, share=0.5, groups="forwards")
    assert [folding.window_at(n) for n in (0, 4, 5, 10, 11)] == [2, 2, 2, 5, 5]
    state = FoldState(folding, 100)
    for start, end in [(0, 3), (3, 5), (5, 7), (7, 10), (10, 12)]:
        state.fed(start, end)
    assert state.due(4) == []  # window 2: (0, 3) needs 3 + 2 fed
    assert state.due(5) == [(0, 3)]
    assert state.due(8) == []  # window 4: (3, 5) needs 5 + 4 (a fixed window of 2: 5 + 2)
    assert state.due(9) == [(3, 5)]
    assert state.due(12) == []  # window 6: (5, 7) needs 7 + 6 (a fixed window of 2 would have folded up to (7, 10))
    assert state.due(14) == [(5, 7)]


def test_a_kv_budget_folds_the_oldest_groups_only_while_the_answer_holds_more_slots():
    """``kv`` B: final groups past the window fold, oldest first, while the answer's slots (fed tokens less what the
    folds took out, plus their merged slots) exceed B per fed token; the rest wait, still foldable later."""
    state = FoldState(parse_folding("forwards:0:kv=0.6"), 100)
    assert state.folding == Folding(window=0, kv=0.6, groups="forwards")
    state.fed(0, 3)
    assert state.due(3) == [(0, 3)] and state.saved == 2  # 3 slots > 1.8: 3 tokens leave, 1 merged slot comes
    state.fed(3, 5)
    assert state.due(5) == []  # 3 slots <= 3.0
    state.fed(5, 7)
    assert state.due(7) == [(3, 5)]  # 5 slots > 4.2; after (3, 5) 4 <= 4.2: (5, 7) waits
    state.fed(7, 10)
    assert state.due(10) == [(5, 7)] and state.saved == 4  # 7 > 6.0, then 6 <= 6.0 (without a budget: (7, 10) too)
    first = FoldState(parse_folding("forwards:0:first:kv=0.5"), 100)  # keep first: no merged slot is fed
    first.fed(0, 4)
    assert first.due(4) == [(0, 4)] and first.saved == 3
    evicted = FoldState(parse_folding("forwards:0:none"), 100)  # keep none: every slot of the group leaves
    evicted.fed(0, 4)
    assert evicted.due(4) == [(0, 4)] and evicted.saved == 4


def test_a_kv_budget_of_zero_is_no_budget_and_a_budget_folds_less():
    entropies = (torch.rand(300, generator=torch.Generator().manual_seed(1)) * 6).tolist()

    def schedule(spec: str) -> tuple[list[list[tuple[int, int]]], list[float]]:
        state = FoldState(parse_folding(spec), vocab_size=49152)
        state.entropies = entropies
        out, ratios = [], []
        for fed in range(len(entropies)):
            out.append(state.due(fed))
            ratios.append((fed - state.saved) / max(fed, 1))
            state.fed(fed, fed + 1)
        return out, ratios

    fixed, fixed_ratios = schedule("segments:8:first:steps=8:p=0.7")
    assert schedule("segments:8:first:steps=8:p=0.7:kv=0")[0] == fixed
    budget, ratios = schedule("segments:8:first:steps=8:p=0.7:kv=0.7")
    assert 0 < sum(map(len, budget)) < sum(map(len, fixed))
    assert max(ratios[150:]) <= 0.7 + 8 / 150 and min(ratios[150:]) > max(fixed_ratios[150:])
    folded = [g for groups in budget for g in groups]
    assert folded == [g for groups in fixed for g in groups][:len(folded)]  # the same groups, oldest first


def test_fold_specs():
    """``GROUPS:WINDOW[:FIELD...]``: the share, the keep, ``steps=N`` and ``p=P`` are optional, in any order, each at
    most once."""
    cut = SegmentSettings(strategy="sliding", sliding_p=0.7, max_steps=8)
    assert parse_folding("segments:32") == Folding(window=32)
    assert parse_folding("segments:32:last") == Folding(window=32, keep="last")
    assert parse_folding("segments:32:none") == Folding(window=32, keep="none")
    assert parse_folding("forwards:8:0.25:merged") == Folding(window=8, share=0.25, groups="forwards")
    assert parse_folding("segments:32:last:0.25") == Folding(window=32, share=0.25, keep="last")
    assert parse_folding("segments:64:first:steps=8:p=0.7") == Folding(window=64, keep="first", segments=cut)
    assert parse_folding("segments:64:p=0.7:steps=8:first") == Folding(window=64, keep="first", segments=cut)
    assert parse_folding("segments:64:kv=0.6:first") == Folding(window=64, kv=0.6, keep="first")
    assert parse_folding("segments:64:offtop:first") == Folding(window=64, keep="first", offtop=True)
    for bad in ("segments", "segments:x", "segments:32:mean", "segments:32:0.1:0.2", "segments:32:last:first",
                "segments:32:q=1", "segments:32:steps=2:steps=3", "segments:32:steps=x", "segments:32:kv=x",
                "segments:32:first:offtop:offtop", "segments:32:offtop=1"):
        with pytest.raises(HamburgerError, match="GROUPS:WINDOW"):
            parse_folding(bad)


def test_the_default_folding_suits_the_shipped_model():
    """`DEFAULT_FOLD` (what verify_fold, the server and the bench fold by when nothing is given) parses and validates
    against the shipped default model's embedder (a keep-merged default must not merge more than it can); the fold
    its fold reader was trained for is `READER_FOLD`, the one `graft --fold-reader-fold` records by default."""
    meta = read_meta(DEFAULT_MODEL_DIR)
    for spec in (DEFAULT_FOLD, READER_FOLD):
        assert parse_folding(spec).validate(meta["config"]["max_steps"]).window > 0
    assert meta["fold_reader"]["fold"] == READER_FOLD


def test_a_growing_window_folds_as_the_fixed_one_until_its_share_passes_it():
    """With ``share`` s, the window stays ``window`` W while int(s * fed) <= W: the same groups fold at every step as
    with the fixed window, so whatever was measured at those lengths holds (W 60, s 0.45: up to 135 tokens); later
    the growing window folds less."""
    entropies = (torch.rand(300, generator=torch.Generator().manual_seed(0)) * 6).tolist()

    def schedule(spec: str) -> list[list[tuple[int, int]]]:
        state = FoldState(parse_folding(spec), vocab_size=49152)
        state.entropies = entropies
        out = []
        for fed in range(len(entropies)):
            out.append(state.due(fed))
            state.fed(fed, fed + 1)
        return out

    fixed, growing = schedule("segments:60:first:steps=8:p=0.7"), schedule("segments:60:0.45:first:steps=8:p=0.7")
    assert growing[:136] == fixed[:136] and any(growing[:136])
    assert sum(map(len, growing)) < sum(map(len, fixed))


def test_keep_last_reads_no_grafted_module(char_tokenizer):
    """Keep ``last`` feeds no merged slot: neither the embedder nor adapters at merged slots act, so a checkpoint
    whose embedder is scrambled decodes the same tokens and cache."""
    folding = FOLDINGS["segments 6, keep last"]
    model = folding_model("llama")
    cfg = DecodingConfig(max_new_tokens=40, confidence=0.2, ignore_eos=True)
    want = VerifyGeneration(model, char_tokenizer, PROMPTS, cfg, fold=folding).run()
    with torch.no_grad():
        for p in model.embedder.parameters():
            p.add_(torch.randn_like(p))
    got = VerifyGeneration(model, char_tokenizer, PROMPTS, cfg, fold=folding).run()
    assert [(r.token_ids, r.kv_slots) for r in got] == [(r.token_ids, r.kv_slots) for r in want]
    assert all(r.kv_slots < r.kv_slots_ordinary for r in got)


def test_cli_fold_keeps_the_adapters(tmp_path, char_tokenizer, capsys):
    """`hamburger generate --mode verify --fold` decodes with the checkpoint's adapters (they read the merged slots),
    as `VerifyGeneration(fold=...)` on the loaded checkpoint does (drafting also by prompt lookup, the default); --fold
    needs verify mode and a GROUPS:WINDOW."""
    import json

    from hamburger.cli.main import main
    from hamburger.core.checkpoint import load_checkpoint
    from hamburger.engine.prompt import encode_prompt
    _, ckpt = save_tiny_lora(tmp_path, char_tokenizer)
    text = "hello there"
    assert main(["generate", "--model", str(ckpt), "--mode", "verify", "--fold", "forwards:0", "--draft", "2",
                 "--json", "--raw", "--max-new-tokens", "16", text]) == 0
    out = json.loads(capsys.readouterr().out)
    model, tokenizer, _ = load_checkpoint(ckpt)
    want = VerifyGeneration(model, tokenizer, [encode_prompt(tokenizer, text, raw=True)],
                            DecodingConfig(max_new_tokens=16), draft=2, fold=Folding(window=0, groups="forwards"),
                            lookup=PromptLookup()).run()
    assert (out["token_ids"], out["kv_slots"]) == (want[0].token_ids, want[0].kv_slots)
    assert main(["generate", "--model", str(ckpt), "--mode", "hamburger", "--fold", "segments:8", "--raw", text]) == 1
    assert main(["generate", "--model", str(ckpt), "--mode", "verify", "--fold", "segments", "--raw", text]) == 1


def test_cli_mode_verify_fold_folds_by_the_default_folding(tmp_path, char_tokenizer, capsys, monkeypatch):
    """`hamburger generate --mode verify_fold` is verify mode with `folding.DEFAULT_FOLD` (here patched to one that
    folds the tiny model's answers), prompt lookup and the stop head at `VERIFY_CONFIDENCE`, on the checkpoint with its
    adapters, and it is the default mode; --mode verify is lossless verify mode, on the unchanged base."""
    import json

    from hamburger.cli import modes as modes_cli
    from hamburger.cli.main import main
    from hamburger.core.checkpoint import load_checkpoint
    from hamburger.engine.folding import parse_folding
    from hamburger.engine.prompt import encode_prompt
    monkeypatch.setattr(modes_cli, "DEFAULT_FOLD", "forwards:2")
    _, ckpt = save_tiny_lora(tmp_path, char_tokenizer)
    text = "hello hello hello"
    outs = []
    for mode in (["--mode", "verify_fold"], [], ["--mode", "verify"]):
        assert main(["generate", "--model", str(ckpt), "--json", "--raw", "--max-new-tokens", "24", *mode, text]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    model, tokenizer, _ = load_checkpoint(ckpt)
    ids = [encode_prompt(tokenizer, text, raw=True)]
    folded = VerifyGeneration(model, tokenizer, ids, DecodingConfig(max_new_tokens=24),
                              fold=parse_folding("forwards:2"), lookup=PromptLookup()).run()[0]
    assert (outs[0]["token_ids"], outs[0]["kv_slots"], outs[0]["forwards"]) == (folded.token_ids, folded.kv_slots,
                                                                               folded.forwards)
    assert outs[0]["folded"] and outs[0]["kv_slots"] < outs[0]["kv_slots_ordinary"] and outs[0]["confidence"] == 0.3
    same = ("token_ids", "kv_slots", "kv_bytes", "forwards", "folded")
    assert [outs[1][k] for k in same] == [outs[0][k] for k in same]  # the default mode is verify_fold
    assert outs[2]["token_ids"] == hf_greedy(tiny_base("llama", seed=3), ids[0], 24)[:outs[2]["tokens"]]
    assert not outs[2]["folded"]


def test_bench_method_verify_fold_is_the_engine_run(char_tokenizer, monkeypatch):
    """`hamburger bench --methods verify_fold` times `VerifyGeneration(fold=VERIFY_FOLD)` on the checkpoint itself,
    drafting by prompt lookup as the CLI does (here a folding that cuts the tiny model's answers: its entropies are
    above any sliding 0.9 threshold)."""
    from hamburger.bench import methods as bench_methods
    from hamburger.engine.folding import parse_folding

    monkeypatch.setattr(bench_methods, "VERIFY_FOLD", "forwards:4")
    model = folding_model()
    assert "verify_fold" in bench_methods.METHOD_NAMES
    (method,) = bench_methods.build_methods(model, char_tokenizer, ["verify_fold"], [])
    got = method.run(PROMPTS[0], 30, ignore_eos=True)
    want = VerifyGeneration(model, char_tokenizer, [PROMPTS[0]], DecodingConfig(max_new_tokens=30, ignore_eos=True),
                            fold=parse_folding("forwards:4"), lookup=PromptLookup()).run()[0]
    assert (got.method, got.token_ids, got.forwards) == ("verify_fold@forwards:4", want.token_ids, want.forwards)
    assert got.kv_slots == want.kv_slots < want.kv_slots_ordinary
    assert method.run_batch(PROMPTS[:2], 12) == [
        r.token_ids for r in VerifyGeneration(model, char_tokenizer, PROMPTS[:2], DecodingConfig(max_new_tokens=12),
                                              fold=parse_folding("forwards:4"), lookup=PromptLookup()).run()]


@pytest.mark.parametrize("window, family, scope", [(w, f, None) for w in (1, 3) for f in ("llama", "qwen2")]
                         + [(3, "llama", "merged"), (3, "llama", "merged_and_after")])
def test_training_window_layout_is_the_folded_reading(window, family, scope):
    """`pack(..., window=W)`, the layout verify mode's folding decodes in: every token a one-token input that the base
    predicts, and each group of 2+ tokens one merged input before the token W after its end (`window_folds`). The
    training forward's logits equal the uncached specification of the engine's cache, token by token."""
    from hamburger.core.packing import TrainBatch, pack, window_folds

    model = folding_model(family, scope)
    prompt, groups = PROMPTS[1], [2, 1, 3, 2, 4, 2, 1, 3]
    answer = torch.randint(10, 90, (sum(groups),), generator=torch.Generator().manual_seed(1)).tolist()
    folds = window_folds(groups, window)
    assert sum(map(len, folds.values())) >= 4, "the test needs folds"
    schedule = [folds.get(i, []) for i in range(len(answer) - 1)]  # the groups folded before token i is fed
    with torch.no_grad():
        out = model.training_forward(pack(TrainBatch([prompt], [answer], [groups]), model.config.max_steps,
                                          window=window))
    want = folded_reference_logits(model, prompt, answer, [1] * (len(answer) - 1), schedule)
    torch.testing.assert_close(out.token_logits, want, rtol=1e-4, atol=1e-4)
    assert out.targets.tolist() == answer
    if scope:  # the adapters act on this reading: without them it differs
        with adapters_disabled(model.base):
            plain = folded_reference_logits(model, prompt, answer, [1] * (len(answer) - 1), schedule)
        assert (plain - want).abs().max() > 1e-2


@pytest.mark.parametrize("spec, scope", [("segments:9:first:steps=6:p=0.7", None),
                                         ("segments:9:0.45:last:steps=6:p=0.7", None),
                                         ("segments:4:0.5:none:steps=6:p=0.7", None),
                                         ("segments:5:0.4:steps=4:p=0.7", None),
                                         ("segments:9:first:steps=6:p=0.7", "after_fold"),
                                         ("segments:4:0.5:none:steps=6:p=0.7", "after_fold")])
def test_training_fold_layout_is_the_engines_schedule_and_reading(spec, scope):
    """`pack(..., window, share, keep)`, the layout `TrainConfig.verify_fold` trains: the groups it folds before each
    token are the engine's own (`FoldState.due` at every fed count, on the entropies the training rows are cut by),
    and the training forward's logits equal the uncached specification of that cache, token by token: a kept token's
    slot stays (keep first/last; none: no slot), and with a growing window (``share``) folds come later. With
    ``lora_scope: after_fold`` the adapters act from the first input after the row's first fold on, as the engine
    switches them on: every token before it is the base's own."""
    from hamburger.core.packing import TrainBatch, pack, window_folds
    from hamburger.data.segment import segment_entropies

    folding = parse_folding(spec)
    entropies = (torch.rand(40, generator=torch.Generator().manual_seed(3)) * 3).tolist()
    state = FoldState(folding, vocab_size=96)
    state.entropies = entropies
    engine = []
    for fed in range(len(entropies) - 1):  # the groups folded before token `fed` is fed, one token per forward
        engine.append(state.due(fed))
        state.fed(fed, fed + 1)
    groups = segment_entropies(entropies, folding.segments, 96)
    folds = window_folds(groups, folding.window, folding.share)
    assert engine == [folds.get(i, []) for i in range(len(entropies) - 1)]
    assert sum(map(len, folds.values())) >= 3 and (folding.keep == "merged" or max(groups) > 4), "the test needs them"
    if folding.keep == "merged":  # (the merged layout's reading is the test above's)
        return
    model = folding_model("llama", scope)
    prompt = PROMPTS[1]
    answer = torch.randint(10, 90, (len(entropies),), generator=torch.Generator().manual_seed(1)).tolist()
    packed = pack(TrainBatch([prompt], [answer], [groups]), model.config.max_steps, window=folding.window,
                  share=folding.share, keep=folding.keep)
    with torch.no_grad():
        out = model.training_forward(packed)
    want = folded_reference_logits(model, prompt, answer, [1] * (len(answer) - 1), engine, folding.keep)
    torch.testing.assert_close(out.token_logits, want, rtol=1e-4, atol=1e-4)
    assert out.targets.tolist() == answer
    first = min(folds)  # the first token fed after a fold: its input is the row's first_fold
    assert packed.first_fold.nonzero().tolist() == [[0, len(prompt) + first]]
    if scope:  # the adapters act from there on, and only there: the tokens predicted before it are the base's
        with adapters_disabled(model.base):
            plain = folded_reference_logits(model, prompt, answer, [1] * (len(answer) - 1), engine, folding.keep)
        assert torch.equal(out.token_logits[:first + 1], plain[:first + 1])
        assert (out.token_logits[first + 1:] - plain[first + 1:]).abs().amax(-1).min() > 1e-2
