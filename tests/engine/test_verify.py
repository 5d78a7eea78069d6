"""Verify mode (the MSD drafts, the base verifies): lossless against the base model, exactly or in distribution."""

import math

import pytest
import torch
from transformers import DynamicCache

from hamburger.engine import cache as cache_module
from hamburger.engine import verify
from hamburger.core.config import HamburgerConfig
from hamburger.core.model import HamburgerModel
from hamburger.core.modules import base_decoder_stack
from hamburger.engine.sampling import DecodingConfig, draw_each, warp_logits
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.ngrams import NgramDrafts
from hamburger.engine.verify import VerifyGeneration, verify_generate
from tests.helpers import PROMPTS, hf_greedy, save_tiny_lora, tiny_base
from tests.verify_helpers import drafting_model


@pytest.mark.parametrize("family", ["llama", "qwen2"])
@pytest.mark.parametrize("init", ["copy_last", "random"])
@pytest.mark.parametrize("draft", [None, 1, 3, 6])
def test_greedy_verify_equals_base_greedy(family, init, draft, char_tokenizer):
    model = drafting_model(family, init)
    for prompt in PROMPTS:
        res = verify_generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=30, confidence=0.2),
                              draft=draft)
        assert res.token_ids == hf_greedy(model.base, prompt, 30)
        assert sum(res.groups) == res.tokens and res.forwards == len(res.groups)
        assert res.groups[1:] == [a + 1 for a in res.accepted][:len(res.groups) - 1]
        assert res.kv_slots == res.kv_slots_ordinary == len(prompt) + res.tokens - 1
        assert sum(res.drafts) > 0


def test_draft_vocabulary_keeps_greedy_exact(tmp_path, char_tokenizer):
    """Drafts restricted to the most frequent tokens of a data file: only those are drafted; output unchanged."""
    import json

    model = drafting_model("llama", "copy_last")
    free = verify_generate(model, char_tokenizer, PROMPTS[1], DecodingConfig(max_new_tokens=30), draft=3)
    data = tmp_path / "data.jsonl"
    common = free.token_ids[:3]
    data.write_text("\n".join(json.dumps({"response_ids": common * 5 + [7, 8, 9]}) for _ in range(3)) + "\n")
    vocab = verify.draft_vocabulary(str(data), 3)
    assert vocab.tolist() == sorted(set(common)) or len(set(common)) < 3
    run = VerifyGeneration(model, char_tokenizer, [PROMPTS[1]], DecodingConfig(max_new_tokens=30), draft=3,
                           draft_vocab=vocab)
    drafted = []
    original = run._draft

    def spy(*args):
        out = original(*args)
        drafted.extend(t for d in out for t in d.tokens)
        return out

    run._draft = spy
    res = run.run()[0]
    assert res.token_ids == free.token_ids == hf_greedy(model.base, PROMPTS[1], 30)
    assert drafted and set(drafted) <= set(vocab.tolist())


@pytest.mark.parametrize("fold", [[], ["--fold", "forwards:0"]])
def test_cli_drafts_over_the_checkpoints_draft_vocabulary(fold, tmp_path, char_tokenizer, capsys, monkeypatch):
    """A checkpoint with a draft vocabulary (`recipes/draft_vocab.py`): `generate --mode verify` drafts only those
    tokens, with or without folding; the output is unchanged."""
    import json

    from hamburger.cli.main import main
    from hamburger.core.checkpoint import write_draft_vocab
    from tests.helpers import save_tiny

    ckpt = save_tiny(tmp_path, char_tokenizer)[1]
    argv = ["generate", "--model", str(ckpt), "--mode", "verify", "--draft", "2", "--json", "--raw",
            "--max-new-tokens", "12", *fold, "hello"]
    assert main(argv) == 0
    free = json.loads(capsys.readouterr().out)
    write_draft_vocab(ckpt, torch.tensor([4, 7, 40]))
    seen = []
    original = VerifyGeneration._draw_drafts

    def spy(self, *args):
        tokens, dists = original(self, *args)
        seen.extend(tokens.tolist())
        return tokens, dists

    monkeypatch.setattr(VerifyGeneration, "_draw_drafts", spy)
    assert main(argv) == 0
    restricted = json.loads(capsys.readouterr().out)
    assert seen and (fold or restricted["token_ids"] == free["token_ids"])  # (folding: forwards fold as they kept)
    assert set(seen) <= {4, 7, 40}


@pytest.mark.parametrize("sampled", [False, True])
def test_drafts_over_a_draft_vocabulary_are_those_of_the_full_head_masked(sampled, char_tokenizer):
    """Drafting over the draft vocabulary's rows of the LM head alone (warped and drawn there when sampling) gives
    the drafts and the distributions of the full head with every other logit at -inf, seed for seed."""
    model = drafting_model("llama")
    vocab = torch.tensor([40, 4, 61, 7, 90, 33])  # (not in vocabulary order)
    cfg = DecodingConfig(max_new_tokens=4, temperature=0.9, top_p=0.8, seed=5) if sampled else \
        DecodingConfig(max_new_tokens=4)
    run = VerifyGeneration(model, char_tokenizer, [PROMPTS[0]] * 3, cfg, draft_vocab=vocab)
    hidden = torch.randn(3, model.base.config.hidden_size, generator=torch.Generator().manual_seed(1))
    gens = [torch.Generator().manual_seed(s) for s in range(3)] if sampled else [None] * 3
    tokens, dists = run._draw_drafts(hidden, [cfg] * 3, gens)
    full = model.decode_logits(hidden).float()
    masked = torch.full_like(full, float("-inf"))
    masked[:, vocab] = full[:, vocab]
    gens = [torch.Generator().manual_seed(s) for s in range(3)] if sampled else [None] * 3
    want, want_dists = draw_each(masked, [cfg] * 3, gens)
    assert tokens.tolist() == want.tolist() and set(tokens.tolist()) <= set(vocab.tolist())
    for q, w in zip(dists, want_dists):
        assert (q is None) == (w is None) == (not sampled)
        if sampled:
            torch.testing.assert_close(q, w)
            assert q[vocab].sum() == pytest.approx(1.0) and q.count_nonzero() <= len(vocab)


def run_steps(run: VerifyGeneration, steps: int):
    """Drive the engine by hand: prefill, first tokens, then ``steps`` verify steps; return the cache."""
    rows = run.rows
    cache, hidden, features = run._prefill(rows)
    run._first_tokens(hidden, rows)
    for r in rows:
        r.fed = len(r.prompt_ids)
    for _ in range(steps):
        drafts = run._draft(hidden, features, rows)
        hidden, features = run._verify(cache, rows, drafts, features)
    return cache


def plain_decode_cache(base, ids: list[int]) -> DynamicCache:
    """The cache of an ordinary decode: the first token, then one token per forward."""
    cache = DynamicCache(config=base.config)
    stack = base_decoder_stack(base)
    for i, t in enumerate(ids):
        stack(input_ids=torch.tensor([[t]]), position_ids=torch.tensor([[i]]), past_key_values=cache, use_cache=True)
    return cache


@pytest.mark.parametrize("compact_at", [0.0, 0.25, 2.0])
def test_rollback_leaves_the_cache_of_an_ordinary_decode(compact_at, char_tokenizer, monkeypatch):
    """After verify steps with rejected drafts, each row's valid cache entries are exactly the keys and values
    an ordinary token-by-token decode of the same tokens holds (batch 1, and a ragged batch with holes,
    compacted always / when holes pile up / never)."""
    monkeypatch.setattr(cache_module, "COMPACT_AT", compact_at)
    model = drafting_model("llama", "random")
    with torch.inference_mode():
        for prompts in ([PROMPTS[1]], PROMPTS):
            run = VerifyGeneration(model, char_tokenizer, prompts, DecodingConfig(max_new_tokens=60), draft=3)
            cache = run_steps(run, 6)
            rows = run.rows
            assert any(a < d for r in rows for a, d in zip(r.accepted, r.drafts)), "the test needs rejections"
            for b, r in enumerate(rows):
                seq = r.prompt_ids + r.tokens[:-1]  # the last token is pending: not fed yet
                ref = plain_decode_cache(model.base, seq)
                keep = cache.valid[b]
                assert int(keep.sum()) == len(seq) == r.fed
                for mine, theirs in zip(cache.kv.layers, ref.layers, strict=True):
                    torch.testing.assert_close(mine.keys[b][:, keep], theirs.keys[0], rtol=1e-5, atol=1e-5)
                    torch.testing.assert_close(mine.values[b][:, keep], theirs.values[0], rtol=1e-5, atol=1e-5)
            if len(prompts) == 1:
                assert bool(cache.valid.all()), "at batch 1 rejected positions are cropped, never masked"
            else:
                steps = list(zip(*(r.accepted for r in rows)))
                assert any(len(set(s)) > 1 for s in steps), "the test needs rows keeping different counts"


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_ragged_batch_equals_base_greedy_per_row(family, char_tokenizer):
    model = drafting_model(family, "random")
    cfgs = [DecodingConfig(max_new_tokens=n, confidence=0.2) for n in (30, 9, 21)]
    results = VerifyGeneration(model, char_tokenizer, PROMPTS, cfgs).run()
    for prompt, cfg, res in zip(PROMPTS, cfgs, results):
        assert res.token_ids == hf_greedy(model.base, prompt, cfg.max_new_tokens)
        assert res.tokens == cfg.max_new_tokens and res.finish_reason == "length"
    steps = list(zip(*(r.accepted for r in results)))
    assert any(len(set(s)) > 1 for s in steps)


def test_rows_join_a_running_batch(char_tokenizer):
    model = drafting_model("llama", "random")
    cfg = DecodingConfig(max_new_tokens=20, confidence=0.2)
    run = VerifyGeneration(model, char_tokenizer, PROMPTS[:1], cfg)
    added = False
    for event in run:
        if not added and len(run.rows[0].tokens) > 5:
            run.add(PROMPTS[1], cfg)
            run.add(PROMPTS[2], cfg)
            added = True
    assert added
    for prompt, res in zip(PROMPTS, run.results):
        assert res.token_ids == hf_greedy(model.base, prompt, 20)


def test_draft_rows_stops_drafting_in_fuller_forwards(char_tokenizer):
    """``draft_rows`` 1: the lone row drafts (by the MSD and by prompt lookup); once two more rows join, no row
    drafts in a forward of 3 rows, and every answer is still the base's greedy one."""
    model = drafting_model("llama", "random")
    cfg = DecodingConfig(max_new_tokens=20, confidence=0.2)
    run = VerifyGeneration(model, char_tokenizer, PROMPTS[:1], cfg, lookup=PromptLookup(tokens=4, min_ngram=1),
                           draft_rows=1)
    joined_at = None
    for _ in run:
        if joined_at is None and len(run.rows[0].tokens) > 5:
            run.add(PROMPTS[1], cfg)
            run.add(PROMPTS[2], cfg)
            joined_at = len(run.rows[0].drafts)
    first, *others = run.results
    assert sum(first.drafts[:joined_at]) > 0 and sum(first.drafts[joined_at + 1:]) == 0
    assert all(sum(r.drafts) == 0 and r.tau == 1.0 for r in others)
    for prompt, res in zip(PROMPTS, run.results):
        assert res.token_ids == hf_greedy(model.base, prompt, 20)
    with pytest.raises(verify.HamburgerError, match="draft_rows"):
        VerifyGeneration(model, char_tokenizer, PROMPTS[:1], cfg, draft_rows=-1)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 13])
def test_max_new_tokens_exact(n, char_tokenizer):
    model = drafting_model("llama")
    model.base.generation_config.eos_token_id = [3]
    try:
        res = verify_generate(model, char_tokenizer, PROMPTS[0], DecodingConfig(max_new_tokens=n), draft=3)
    finally:
        model.base.generation_config.eos_token_id = [2, 3]
    if res.finish_reason == "length":
        assert res.tokens == n
    assert res.tokens <= n


def test_every_eos_id_ends_the_output(char_tokenizer):
    model = drafting_model("llama")
    free = verify_generate(model, char_tokenizer, PROMPTS[1], DecodingConfig(max_new_tokens=30), draft=3)
    target = free.token_ids[4]  # declared an end-of-sequence id (inside an accepted draft run)
    for eos in ([2, target], [target, 3]):
        model.base.generation_config.eos_token_id = eos
        try:
            res = verify_generate(model, char_tokenizer, PROMPTS[1], DecodingConfig(max_new_tokens=30), draft=3)
        finally:
            model.base.generation_config.eos_token_id = [2, 3]
        first = free.token_ids.index(target)
        assert res.token_ids == free.token_ids[:first + 1] and res.finish_reason == "eos"


def test_no_slot_stays_after_an_eos_among_kept_drafts(char_tokenizer):
    """A row that ends at an EOS id inside the drafts a forward kept keeps no cache slot after it: its KV is an
    ordinary decode's (the prompt and every token but the last). Oracle drafts (the base's own next tokens) make the
    forward keep tokens after the EOS id."""
    model = drafting_model("llama")
    prompt = PROMPTS[0]
    greedy = hf_greedy(model.base, prompt, 30)
    at = next(i for i in range(1, 30) if greedy[i] not in greedy[:i])  # a token that first occurs there
    d = next(d for d in (3, 2) if (at - 1) % (d + 1) != d)  # forwards of d + 1 tokens: `at` is not a forward's last
    model.base.generation_config.eos_token_id = [greedy[at]]
    try:
        run = VerifyGeneration(model, char_tokenizer, [prompt], DecodingConfig(max_new_tokens=30))
        run._draft = lambda hidden, features, rows: [
            verify._Drafts(tokens=greedy[len(r.tokens):len(r.tokens) + min(d, run._budget(r))]) for r in rows]
        res = run.run()[0]
    finally:
        model.base.generation_config.eos_token_id = [2, 3]
    assert res.token_ids == greedy[:at + 1] and res.finish_reason == "eos"
    assert res.accepted[-1] == d and res.groups[-1] < d + 1, "the last forward kept tokens after the EOS id"
    assert res.kv_slots == res.kv_slots_ordinary == len(prompt) + res.tokens - 1


def test_stop_strings_and_streaming(char_tokenizer):
    model = drafting_model("llama")
    full = verify_generate(model, char_tokenizer, PROMPTS[0], DecodingConfig(max_new_tokens=30), draft=3)
    stop = full.text[5:7]
    run = VerifyGeneration(model, char_tokenizer, [PROMPTS[0]], DecodingConfig(max_new_tokens=30, stop=[stop]),
                           draft=3)
    events = list(run)
    res = run.results[0]
    assert res.finish_reason == "stop" and res.text == full.text[:full.text.find(stop)]
    assert "".join(e.text for e in events) == res.text
    assert [len(e.token_ids) for e in events] == res.groups  # one event per base forward
    assert sum((e.token_ids for e in events), []) == res.token_ids


def test_sampling_is_reproducible_with_a_seed(char_tokenizer):
    model = drafting_model("llama", "random")
    cfg = DecodingConfig(max_new_tokens=25, temperature=1.0, top_p=0.95, top_k=30, seed=11, confidence=0.2)
    a = verify_generate(model, char_tokenizer, PROMPTS[0], cfg)
    b = verify_generate(model, char_tokenizer, PROMPTS[0], cfg)
    assert a.token_ids == b.token_ids and a.groups == b.groups
    other = verify_generate(model, char_tokenizer, PROMPTS[0], DecodingConfig(
        max_new_tokens=25, temperature=1.0, top_p=0.95, top_k=30, seed=12, confidence=0.2))
    assert other.token_ids != a.token_ids


def chi_square_critical(df: int, z: float = 3.09) -> float:
    """Upper critical value of chi-square (Wilson-Hilferty); z = 3.09 is the 0.001 tail."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def chi_square(counts: torch.Tensor, probs: torch.Tensor) -> tuple[float, int]:
    """Pearson's statistic over cells with an expected count >= 5 (the rest pooled into one cell)."""
    expected = probs * counts.sum()
    big = expected >= 5
    obs = torch.cat([counts[big], counts[~big].sum()[None]])
    exp = torch.cat([expected[big], expected[~big].sum()[None]])
    used = exp > 0
    return float(((obs[used] - exp[used]) ** 2 / exp[used]).sum()), int(used.sum()) - 1


@pytest.mark.parametrize("draft_vocab, lookup", [(None, None), ([0, 1, 4, 5], None),
                                                 (None, PromptLookup(tokens=2, ngram=2, min_ngram=1))])
def test_speculative_sampling_follows_the_base_distribution(draft_vocab, lookup, char_tokenizer):
    """Tokens 2 and 3 come out of the acceptance test (draft accepted, or redrawn from the residual); their
    joint frequency over many seeds matches the base's exact distribution, and not the drafts' own; also
    when the drafts are restricted to a few tokens (q is 0 elsewhere), and when prompt lookup drafts where the text
    repeats (a certain draft: q is one-hot). An n-gram table is given too: sampled rows never draft from it."""
    torch.manual_seed(0)
    base = tiny_base("llama", seed=5, vocab=6)
    model = HamburgerModel(base, HamburgerConfig(max_steps=3, decoder_init="random")).eval()
    with torch.no_grad():
        base_decoder_stack(base).norm.weight.mul_(2.0)  # sharpen the base's distribution (not the MSD's)
    # 2 drafts after t1: t2 and t3 pass the acceptance test
    cfg = dict(max_new_tokens=4, temperature=0.9, top_k=5, ignore_eos=True)
    prompt = [1, 4, 5]
    vocab = 6
    with torch.inference_mode():  # exact joint of the first three tokens under the warped base
        seqs = torch.tensor([prompt + [a, b] for a in range(vocab) for b in range(vocab)])
        logits = base(seqs).logits[:, -3:].float()
        p = torch.stack([torch.stack([warp_logits(x, DecodingConfig(**cfg)).softmax(-1) for x in row])
                         for row in logits]).view(vocab, vocab, 3, vocab)
        joint = p[0, 0, 0][:, None, None] * p[:, 0, 1][:, :, None] * p[:, :, 2]  # P(t1, t2, t3)
    exact = joint.sum(0).flatten()  # P(t2, t3)
    samples = 4000
    counts = torch.zeros(vocab * vocab)
    drafted = accepted = looked = 0
    for start in range(0, samples, 500):
        cfgs = [DecodingConfig(**cfg, seed=start + i) for i in range(500)]
        vocab_ids = torch.tensor(draft_vocab) if draft_vocab else None
        for res in VerifyGeneration(model, char_tokenizer, [prompt] * 500, cfgs, draft=2, draft_vocab=vocab_ids,
                                    lookup=lookup, ngrams=NgramDrafts(6, {1: {t: t for t in range(6)}})).run():
            counts[res.token_ids[1] * vocab + res.token_ids[2]] += 1
            drafted += sum(res.drafts)
            accepted += sum(res.accepted)
            looked += res.looked_up[0]
    assert 0.1 < accepted / drafted < 0.9, "the test needs both accepted and rejected drafts"
    if lookup:
        assert 0.1 < looked / samples < 0.9, "the test needs lookup drafts and MSD drafts"
    else:
        assert looked == 0, "a sampled row drafted from the n-gram table"
    stat, df = chi_square(counts, exact)
    assert stat < chi_square_critical(df), (stat, df)
    marginal = counts.view(vocab, vocab).sum(1)
    stat, df = chi_square(marginal, exact.view(vocab, vocab).sum(1))
    assert stat < chi_square_critical(df), (stat, df)
    # The same counts are far from what keeping every draft would give: the test can tell them apart.
    with torch.inference_mode():
        prefill = model.base_forward(model.embed(torch.tensor([prompt])), torch.arange(3)[None],
                                     torch.ones(1, 1, 3, 3, dtype=torch.bool).tril())[1][:, -1]
        h = model.micro_hidden(prefill.expand(vocab, -1, -1), torch.arange(vocab)[:, None])[:, 0]
        q = torch.stack([warp_logits(x, DecodingConfig(**cfg)).softmax(-1) for x in model.lm_head(h).float()])
        if draft_vocab:  # the drafts' own distribution, restricted to the draft vocabulary
            outside = torch.ones(vocab, dtype=torch.bool)
            outside[draft_vocab] = False
            q = q.masked_fill(outside, 0.0)
            q = q / q.sum(-1, keepdim=True)
    if lookup is None:
        naive_t2 = (p[0, 0, 0][:, None] * q).sum(0)
        stat, df = chi_square(marginal, naive_t2)
        assert stat > chi_square_critical(df), "draft and base distributions are too close for this test"


@pytest.mark.slow
def test_bundled_model_verify_equals_base_greedy():
    """The shipped model in verify mode: the base's greedy output at batch 1 and in a ragged batch."""
    from hamburger import load_model
    from hamburger.engine.prompt import encode_prompt

    model, tokenizer, _, reference = load_model(None, "float32", reference=True)
    prompts = ["What is 2+2?", "Write one sentence about the sea.", "List the days of the week."]
    ids = [encode_prompt(tokenizer, p) for p in prompts]
    refs = []
    for x in ids:
        out = reference.base.generate(torch.tensor([x]), attention_mask=torch.ones(1, len(x), dtype=torch.long),
                                      max_new_tokens=24, do_sample=False)
        refs.append(out[0, len(x):].tolist())
    single = verify_generate(model, tokenizer, ids[1], DecodingConfig(max_new_tokens=24))
    assert single.token_ids == refs[1]
    batch = VerifyGeneration(model, tokenizer, ids, [DecodingConfig(max_new_tokens=n) for n in (24, 24, 16)],
                             draft=3).run()
    for res, ref, n in zip(batch, refs, (24, 24, 16)):
        assert res.token_ids == ref[:n]
    assert sum(sum(r.accepted) for r in batch) > 0, "the trained MSD drafts some tokens the base keeps"


def test_cli_verify_mode_is_lossless_on_the_unchanged_base(tmp_path, char_tokenizer, capsys):
    """`hamburger generate --mode verify` on a checkpoint whose base carries LoRA adapters gives the greedy
    output of the unchanged base (the adapters are left out), through the one-line entry point."""
    import json

    from hamburger.cli.main import main
    _, ckpt = save_tiny_lora(tmp_path, char_tokenizer)
    text = "hello there"
    assert main(["generate", "--model", str(ckpt), "--mode", "verify", "--draft", "2", "--json", "--raw",
                 "--max-new-tokens", "16", text]) == 0
    out = json.loads(capsys.readouterr().out)
    ids = char_tokenizer(text, add_special_tokens=True)["input_ids"]
    assert out["token_ids"] == hf_greedy(tiny_base("llama", seed=3), ids, 16)[:out["tokens"]]
    assert out["tokens"] == 16 or out["finish_reason"] == "eos"
    assert sum(out["drafts"]) > 0
    assert main(["generate", "--model", str(ckpt), "--mode", "hamburger", "--draft", "2", "--raw", text]) == 1


def test_bench_method_verify_matches_hf_generate(char_tokenizer):
    from hamburger.bench.methods import METHOD_NAMES, build_methods

    model = drafting_model("llama")
    assert "verify" in METHOD_NAMES
    verify_method, hf = build_methods(model, char_tokenizer, ["verify", "hf_generate"], [])
    a, b = verify_method.run(PROMPTS[1], 20), hf.run(PROMPTS[1], 20)
    assert a.token_ids == b.token_ids and a.forwards <= b.forwards
    assert verify_method.run_batch(PROMPTS, 12) == [hf_greedy(model.base, p, 12) for p in PROMPTS]


def test_verify_with_chunked_prefill_and_rows_joining_mid_run(char_tokenizer):
    """The server's hooks work in verify mode: long prompts read in chunks, rows added from `poll` mid-run, and
    still every row is the base's greedy output."""
    model = drafting_model("llama", "copy_last")
    long_prompt = [1] + [4 + (7 * k) % 90 for k in range(40)]
    cfg = DecodingConfig(max_new_tokens=16)
    late = [PROMPTS[2], long_prompt]
    run = None

    def poll():
        if late and len(run.rows) < 4:
            run.add(late.pop(0), cfg)

    run = VerifyGeneration(model, char_tokenizer, [PROMPTS[0], long_prompt[:30]], cfg, draft=2,
                           prefill_chunk=8, poll=poll)
    results = run.run()
    assert len(results) == 4 and not late
    for r, p in zip(results, [PROMPTS[0], long_prompt[:30], PROMPTS[2], long_prompt]):
        assert r.token_ids == hf_greedy(model.base, p, 16)


@pytest.mark.parametrize("greedy", [True, False])
def test_acceptance_tested_by_chunks_of_rows_equals_at_once(greedy):
    """`speculative_accept` over rows s.. of the logits (None: every draft there kept) decides as over all rows,
    drawing the same random numbers."""
    gen = torch.Generator().manual_seed(0)
    cfg = DecodingConfig() if greedy else DecodingConfig(temperature=1.0, seed=0)
    for trial in range(40):
        logits = torch.randn(6, 5, generator=gen) * 3
        best = [int(t) for t in logits[:5].argmax(-1)]
        tokens = best if trial % 2 else torch.randint(5, (5,), generator=gen).tolist()
        if trial % 3 == 0:
            tokens[trial % 5] = (tokens[trial % 5] + 1) % 5  # a wrong draft somewhere
        q = [torch.softmax(torch.randn(5, generator=gen), -1) for _ in tokens]
        drafts = verify._Drafts(tokens=tokens, q=[] if greedy else q)
        at_once = verify.speculative_accept(logits, drafts, cfg, torch.Generator().manual_seed(trial))
        for chunk in (1, 2, 4):
            rng, outcome, start = torch.Generator().manual_seed(trial), None, 0
            while outcome is None:
                outcome = verify.speculative_accept(logits[start:start + chunk], drafts, cfg, rng, start=start)
                start += chunk
            assert outcome == at_once


def test_the_heads_chunk_size_changes_no_token(char_tokenizer):
    model = drafting_model("llama", "random")
    for cfg in (DecodingConfig(max_new_tokens=40), DecodingConfig(max_new_tokens=40, temperature=1.0, seed=3)):
        runs = [VerifyGeneration(model, char_tokenizer, PROMPTS, cfg, draft=3, head_chunk=c).run() for c in (1, 2, 99)]
        for rows in zip(*runs):
            assert all(r.token_ids == rows[0].token_ids and r.accepted == rows[0].accepted for r in rows)
    with pytest.raises(verify.HamburgerError, match="head_chunk"):
        VerifyGeneration(model, char_tokenizer, PROMPTS, DecodingConfig(), head_chunk=0)
