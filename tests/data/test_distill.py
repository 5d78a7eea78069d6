"""Distillation and segmentation end to end on a tiny random Llama with the bundled (real) tokenizer."""

import json
import os

import pytest
import torch

os.environ["HF_HUB_OFFLINE"] = "1"
torch.set_num_threads(1)

from hamburger.data import answers as A  # noqa: E402
from hamburger.data import dataset as DS  # noqa: E402
from hamburger.cli.main import build_parser  # noqa: E402
from hamburger.data import segment as S  # noqa: E402
from hamburger.data.io import read_jsonl  # noqa: E402
from hamburger.engine.prompt import chat_prompt_ids  # noqa: E402
from hamburger.errors import HamburgerError  # noqa: E402

PROMPTS = ["hi", "What is 2+2? Explain.", "a b c d e f g h i j", "Tell me a story about a cat.",
           "Translate 'good morning' to French.", "List three colours."]


def run(argv):
    """One verb through the real CLI parser, its HamburgerError raised (not turned into exit code 1)."""
    args = build_parser().parse_args(argv)
    return args.func(args)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    """A tiny random Llama whose EOS logit is boosted (so rows end at different lengths) + the real tokenizer."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from hamburger.core.base import resolve_base

    try:
        tok = AutoTokenizer.from_pretrained(resolve_base(None)[1])
    except HamburgerError as e:
        pytest.skip(f"bundled tokenizer unavailable: {e}")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, intermediate_size=128, max_position_embeddings=512, bos_token_id=1,
                      eos_token_id=2, pad_token_id=2, tie_word_embeddings=False)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        w = model.lm_head.weight
        w[2] = w[2] / w[2].norm() * w.norm(dim=1).mean() * 3
    path = tmp_path_factory.mktemp("tiny") / "model"
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture
def prompts_file(tmp_path):
    path = tmp_path / "prompts.jsonl"
    rows = [{"id": f"p{i}", "prompt": p, "source": "s" + str(i % 2)} for i, p in enumerate(PROMPTS)]
    rows.append({"id": "empty", "prompt": "  ", "source": "s0"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def distill_args(tiny_dir, prompts, out, *extra):
    return ["distill", "--base", str(tiny_dir), "--prompts", str(prompts), "--out", str(out),
            "--max-new-tokens", "24", "--batch-size", "4", "--device", "cpu", *extra]


def in_order(model, prompts, max_new_tokens, draws=None, batch_size=32, refill_every=A.REFILL_EVERY):
    """`answers.answers` on ``prompts`` ((temperature, top_p, seed) each: ``draws``, default greedy) as
    (tokens, finish reason, stop id) in the prompts' order."""
    draws = draws or [(0.0, 1.0, 0)] * len(prompts)
    requests = [A.Request(i, p, *d) for i, (p, d) in enumerate(zip(prompts, draws))]
    got = {a.key: (a.tokens, a.finish_reason, a.stop_token_id)
           for ended in A.answers(model, requests, [2], max_new_tokens, batch_size, refill_every) for a in ended}
    return [got[i] for i in range(len(prompts))]


@pytest.mark.parametrize("batch_size,refill_every", [(32, 8), (2, 3), (3, 1)])
def test_answers_equal_hf_generate_one_prompt_at_a_time(tiny_dir, batch_size, refill_every):
    """Whole batches, and rows that leave and join a running batch (2 or 3 rows for 6 prompts), every few forwards
    or at every one: each answer is HF `generate`'s greedy answer to its prompt alone."""
    from transformers import AutoTokenizer, LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(tiny_dir).double().eval()
    tok = AutoTokenizer.from_pretrained(tiny_dir)
    prompts = [chat_prompt_ids(tok, p) for p in PROMPTS]
    got = in_order(model, prompts, 24, batch_size=batch_size, refill_every=refill_every)
    assert {f for _, f, _ in got} == {"eos", "length"}  # both kinds of ending occur
    for p, (resp, reason, stop) in zip(prompts, got):
        ref = model.generate(torch.tensor([p]), max_new_tokens=24, do_sample=False, eos_token_id=[2],
                             pad_token_id=2)[0, len(p):].tolist()
        assert resp == (ref[:ref.index(2)] if 2 in ref else ref)
        assert (reason, stop) == (("eos", 2) if 2 in ref else ("length", None))
        assert 2 not in resp and (len(resp) == 24) == (reason == "length")


@pytest.mark.parametrize("family", ["mistral-sliding", "gemma2", "gemma3", "granite", "deepseek_v3"])
def test_answers_equal_hf_generate_on_other_families(family):
    """Bases that slide over 8 positions (all layers, alternate ones, three of four), cap or scale their logits, or
    whose layers the lean pass does not run: rows that leave and join a batch of 2 answer as HF `generate` alone."""
    from tests.helpers import tiny_base

    model = tiny_base(family)
    model = model.float() if family == "deepseek_v3" else model.double()  # (its experts' grouped products: no fp64)
    generator = torch.Generator().manual_seed(1)
    prompts = [torch.randint(4, 100, (n,), generator=generator).tolist() for n in (5, 23, 11, 17, 9)]
    got = in_order(model, prompts, 20, batch_size=2, refill_every=3)
    for p, (resp, _, _) in zip(prompts, got):
        ref = model.generate(torch.tensor([p]), max_new_tokens=20, do_sample=False, eos_token_id=[2],
                             pad_token_id=0)[0, len(p):].tolist()
        assert resp == (ref[:ref.index(2)] if 2 in ref else ref)


def test_distill_resumes_without_duplicates_or_losses(tiny_dir, prompts_file, tmp_path, capsys):
    out = tmp_path / "d.jsonl"
    assert run(distill_args(tiny_dir, prompts_file, out, "--limit", "3")) == 0
    assert len(read_jsonl(out)) == 3
    assert run(distill_args(tiny_dir, prompts_file, out)) == 0
    assert "empty 1" in capsys.readouterr().err
    rows = read_jsonl(out)
    assert sorted(r["id"] for r in rows) == sorted(f"p{i}" for i in range(6))
    # a kill mid-write leaves half a line: it is cut off and that row is made again
    data = out.read_bytes()
    out.write_bytes(data[:-15])
    assert run(distill_args(tiny_dir, prompts_file, out)) == 0
    again = read_jsonl(out)
    assert sorted(r["id"] for r in again) == sorted(r["id"] for r in rows)
    assert {r["id"]: r["response_token_ids"] for r in again} == {r["id"]: r["response_token_ids"] for r in rows}
    for r in again:
        assert r["finish_reason"] in ("eos", "length") and 2 not in r["response_token_ids"]
        assert r["source"] in ("s0", "s1") and r["prompt"] in PROMPTS
    meta = json.loads((tmp_path / "d.jsonl.meta.json").read_text())
    assert meta["settings"]["max_new_tokens"] == 24 and meta["base_fingerprint"] == rows[0]["base_fingerprint"]
    with pytest.raises(HamburgerError, match="other settings"):
        run(distill_args(tiny_dir, prompts_file, out, "--temperature", "0.7"))


def test_distill_shards_split_the_prompts(tiny_dir, prompts_file, tmp_path, monkeypatch):
    out = tmp_path / "d.jsonl"
    monkeypatch.setenv("WORLD_SIZE", "2")
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        assert run(distill_args(tiny_dir, prompts_file, out)) == 0
    ids = [[r["id"] for r in read_jsonl(f"{out}.rank{k}")] for k in (0, 1)]
    assert sorted(ids[0]) == ["p0", "p2", "p4"] and sorted(ids[1]) == ["p1", "p3", "p5"]
    assert not out.exists()


def test_compute_entropies_matches_one_row_forward(tiny_dir):
    from transformers import AutoTokenizer, LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(tiny_dir).eval()
    tok = AutoTokenizer.from_pretrained(tiny_dir)
    pairs = [(chat_prompt_ids(tok, p), tok(p[::-1])["input_ids"] + [2]) for p in PROMPTS[:4]]
    got = S.compute_entropies(model, tok, pairs, batch_size=3)
    for (p, r), (ent, prob) in zip(pairs, got):
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([p + r])).logits[0, len(p) - 1:-1].double(), -1)
        assert torch.allclose(torch.tensor(ent, dtype=torch.float64), -(logp.exp() * logp).sum(-1), atol=1e-4)
        want = logp.gather(1, torch.tensor(r)[:, None])[:, 0].exp()
        assert torch.allclose(torch.tensor(prob, dtype=torch.float64), want, atol=1e-5)


def test_segment_end_to_end(tiny_dir, prompts_file, tmp_path, capsys):
    data, out = tmp_path / "d.jsonl", tmp_path / "s.jsonl"
    run(distill_args(tiny_dir, prompts_file, data))
    distilled = {r["id"]: r for r in read_jsonl(data)}
    assert run(["segment", "--base", str(tiny_dir), "--data", str(data), "--out", str(out), "--device", "auto",
                "--batch-size", "4", "--max-steps", "3"]) == 0
    assert "tokens per group" in capsys.readouterr().out
    rows, meta = DS.load_dataset(out)
    assert len(rows) == 6
    for r in rows:
        d = distilled[r["id"]]
        assert sum(r["groups"]) == len(r["response_ids"]) and max(r["groups"]) <= 3
        assert r["response_ids"] == d["response_token_ids"] + ([2] if d["finish_reason"] == "eos" else [])
        assert r["complete"] == (d["finish_reason"] == "eos")
        assert len(r["entropies"]) == len(r["token_probs"]) == len(r["response_ids"])
        assert r["groups"] == S.decreasing_v2(r["entropies"], 3)
    assert meta["max_steps"] == 3 and meta["strategy"] == "decreasing_v2" and meta["stats"]["rows"] == 6
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_dir)
    DS.check_dataset_compatible(meta, tok, 3)
    with pytest.raises(HamburgerError, match="max_steps"):
        DS.check_dataset_compatible(meta, tok, 4)
    # rerun: nothing new; missing field: a clear error
    assert run(["segment", "--base", str(tiny_dir), "--data", str(data), "--out", str(out),
                            "--max-steps", "3"]) == 0
    assert len(DS.load_dataset(out)[0]) == 6
    with pytest.raises(HamburgerError, match="no field 'answer'"):
        run(["segment", "--base", str(tiny_dir), "--data", str(data), "--out", str(tmp_path / "x"),
                         "--response-field", "answer"])


def test_recorded_entropies_equal_a_forward_over_the_answer(tiny_dir):
    """The entropy and probability `answers` records for each token it draws (the EOS too) are those a forward over
    the finished answer gives (`compute_entropies`: the base's distribution at temperature 1, whatever the draw's;
    greedy and sampled rows in one batch)."""
    from transformers import AutoTokenizer, LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(tiny_dir).eval()
    tok = AutoTokenizer.from_pretrained(tiny_dir)
    prompts = [chat_prompt_ids(tok, p) for p in PROMPTS]
    requests = [A.Request(i, p, *((0.0, 1.0, 0) if i % 2 else (0.9, 0.8, i))) for i, p in enumerate(prompts)]
    got = {a.key: a for ended in A.answers(model, requests, [2], 24, batch_size=3, refill_every=2, entropies=True)
           for a in ended}
    assert {a.finish_reason for a in got.values()} == {"eos", "length"}
    answers = [got[i].tokens + ([got[i].stop_token_id] if got[i].finish_reason == "eos" else [])
               for i in range(len(prompts))]
    for i, (ent, prob) in enumerate(S.compute_entropies(model, tok, list(zip(prompts, answers)), batch_size=4)):
        assert len(got[i].entropies) == len(got[i].token_probs) == len(answers[i])
        assert torch.allclose(torch.tensor(got[i].entropies), torch.tensor(ent), atol=1e-4)
        assert torch.allclose(torch.tensor(got[i].token_probs), torch.tensor(prob), atol=1e-5)
    plain = next(iter(A.answers(model, requests[:1], [2], 4, batch_size=1)))[0]
    assert plain.entropies is None and plain.token_probs is None


def test_segment_cuts_by_the_entropies_distill_recorded(tiny_dir, prompts_file, tmp_path, monkeypatch):
    """`segment` takes distill's entropies where it recorded them for the same prompt, and runs the base only over
    the other rows (all of them with `--entropies recompute` or another system message, and those distill wrote in
    another dtype unless `--entropies recorded`); the cuts are the same."""
    data = tmp_path / "d.jsonl"
    assert run(distill_args(tiny_dir, prompts_file, data)) == 0
    rows = read_jsonl(data)
    assert all(len(r["entropies"]) == len(r["token_probs"]) == len(r["response_token_ids"])
               + (r["finish_reason"] == "eos") for r in rows)
    assert run(distill_args(tiny_dir, prompts_file, tmp_path / "plain.jsonl", "--no-entropies")) == 0
    assert all("entropies" not in r and "token_probs" not in r for r in read_jsonl(tmp_path / "plain.jsonl"))
    del rows[0]["entropies"], rows[0]["token_probs"]  # a row distill wrote before it recorded them
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    recorded = {r["id"]: r for r in rows[1:]}
    read, real = [], S.compute_entropies
    monkeypatch.setattr(S, "compute_entropies", lambda m, t, pairs, b: read.extend(pairs) or real(m, t, pairs, b))

    def segment(name, *extra):
        read.clear()
        assert run(["segment", "--base", str(tiny_dir), "--data", str(data), "--out", str(tmp_path / name),
                    "--batch-size", "4", *extra]) == 0
        return DS.load_dataset(tmp_path / name)

    by_record, meta = segment("s.jsonl")
    assert len(read) == 1 and meta["stats"]["last_run_entropies"] == {
        "recorded": 5, "recorded_dtype": "float32", "computed": 1, "computed_dtype": "float32"}
    for r in by_record:
        if r["id"] in recorded:
            assert (r["entropies"], r["token_probs"]) == (recorded[r["id"]]["entropies"],
                                                          recorded[r["id"]]["token_probs"])
    by_forward, meta = segment("f.jsonl", "--entropies", "recompute")
    assert len(read) == 6 and meta["stats"]["last_run_entropies"]["recorded"] == 0
    for a, b in zip(by_record, by_forward):
        assert (a["id"], a["prompt_ids"], a["response_ids"], a["groups"]) == \
            (b["id"], b["prompt_ids"], b["response_ids"], b["groups"])
        assert max(abs(x - y) for x, y in zip(a["entropies"] + a["token_probs"], b["entropies"] + b["token_probs"])) \
            <= 2e-4
    # another system message: distill's entropies follow another prompt
    assert len(segment("sys.jsonl", "--system", "Be brief.")[0]) == 6 and len(read) == 6
    # another dtype: its own forwards, unless any recorded ones will do
    assert segment("bf16.jsonl", "--dtype", "bfloat16")[1]["stats"]["last_run_entropies"]["computed"] == 6
    _, meta = segment("any.jsonl", "--dtype", "bfloat16", "--entropies", "recorded")
    assert len(read) == 1 and meta["stats"]["last_run_entropies"] == {
        "recorded": 5, "recorded_dtype": "float32", "computed": 1, "computed_dtype": "bfloat16"}
    with pytest.raises(HamburgerError, match="entropies must be one of same-dtype, recorded, recompute"):
        S.segment(tmp_path / "x.jsonl", data=data, base=str(tiny_dir), entropies="float32")
    # a response cut to --max-length keeps the entropies of its tokens
    longest = max(r["n_prompt_tokens"] for r in rows)
    cut, meta = segment("cut.jsonl", "--long", "truncate", "--max-length", str(longest + 3))
    assert len(read) == 1 and meta["stats"]["last_run_skipped"]["too_long_truncated"] >= 1
    for r in cut:
        assert len(r["entropies"]) == len(r["response_ids"])
        if r["id"] in recorded:
            assert r["entropies"] == recorded[r["id"]]["entropies"][:len(r["response_ids"])]


def test_segment_text_pairs_long_rule_and_empty(tiny_dir, tmp_path, capsys):
    data = tmp_path / "qa.jsonl"
    rows = [{"question": "What is 1+1?", "answer": "It is 2. #### 2"},
            {"question": "Spell cat.", "answer": ""},
            {"question": "Count.", "answer": " ".join(str(i) for i in range(200))}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    common = ["segment", "--base", str(tiny_dir), "--data", str(data), "--prompt-field", "question",
              "--response-field", "answer", "--max-length", "100"]
    assert run(common + ["--out", str(tmp_path / "drop.jsonl")]) == 0
    assert "empty 1" in capsys.readouterr().out
    kept, _ = DS.load_dataset(tmp_path / "drop.jsonl")
    assert [r["id"] for r in kept] == ["qa:0"] and kept[0]["response_ids"][-1] == 2 and kept[0]["complete"]
    assert run(common + ["--long", "truncate", "--out", str(tmp_path / "cut.jsonl")]) == 0
    cut, meta = DS.load_dataset(tmp_path / "cut.jsonl")
    long_row = [r for r in cut if r["id"] == "qa:2"][0]
    assert long_row["truncated"] and not long_row["complete"]
    assert len(long_row["prompt_ids"]) + len(long_row["response_ids"]) == 100
    assert meta["stats"]["last_run_skipped"]["too_long_truncated"] == 1


@pytest.mark.parametrize("bad, problem", [
    ({"prompt": 5, "response": ["x"]}, "field 'prompt' must be a string"),
    ({"prompt": "Hi", "response": ["x"]}, "field 'response' must be a string"),
    ({"prompt": "Hi", "response": None}, "field 'response' must be a string"),
    ({"prompt": "Hi", "response": "Yo", "response_token_ids": ["a"]}, "'response_token_ids' must be a list"),
    ({"prompt": "Hi", "response": "Yo", "stop_token_id": "2"}, "'stop_token_id' must be an integer"),
    ({"prompt": "Hi", "response": "Yo", "entropies": ["0.1"]}, "'entropies' must be a list of numbers"),
    ({"prompt": "Hi", "response": "Yo", "token_probs": [True]}, "'token_probs' must be a list of numbers"),
    (["Hi", "Yo"], "must be a JSON object"),
])
def test_segment_wrong_field_types_name_file_line_and_field(tiny_dir, tmp_path, bad, problem):
    """A wrong type is an error naming the file, its line (blank lines count) and the field, never "empty"."""
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"prompt": "Fine", "response": "Yes."}) + "\n\n" + json.dumps(bad) + "\n")
    with pytest.raises(HamburgerError) as info:
        run(["segment", "--base", str(tiny_dir), "--data", str(data), "--out", str(tmp_path / "s.jsonl")])
    assert str(info.value).startswith(f"{data}: line 3: ") and problem in str(info.value), info.value
    assert not (tmp_path / "s.jsonl").exists()


@pytest.mark.slow
def test_real_base_distil_and_segment(tmp_path):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"id": "a", "prompt": "What is 2+2?"}) + "\n"
                       + json.dumps({"id": "b", "prompt": "Name a colour."}) + "\n")
    data, out = tmp_path / "d.jsonl", tmp_path / "s.jsonl"
    assert run(["distill", "--prompts", str(prompts), "--out", str(data), "--max-new-tokens", "32"]) == 0
    rows = read_jsonl(data)
    assert len(rows) == 2 and all(r["response"].strip() for r in rows)
    assert run(["segment", "--data", str(data), "--out", str(out)]) == 0
    seg, meta = DS.load_dataset(out)
    assert len(seg) == 2 and all(sum(r["groups"]) == len(r["response_ids"]) for r in seg)
    assert 1.0 <= meta["stats"]["tokens_per_group"] <= 4.0
    # cut by the entropies distill recorded, the cut is the one a forward over the answers gives
    assert meta["stats"]["last_run_entropies"]["recorded"] == 2
    assert run(["segment", "--data", str(data), "--out", str(tmp_path / "f.jsonl"), "--entropies", "recompute"]) == 0
    again, meta = DS.load_dataset(tmp_path / "f.jsonl")
    assert meta["stats"]["last_run_entropies"]["computed"] == 2
    assert [r["groups"] for r in again] == [r["groups"] for r in seg]
    assert max(abs(x - y) for a, b in zip(seg, again) for x, y in zip(a["entropies"], b["entropies"])) <= 2e-4


def test_pick_device_names_and_errors():
    from hamburger.core.base import pick_device

    assert pick_device("cpu").type == "cpu"
    assert pick_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(HamburgerError, match="cpu, cuda or auto"):
        pick_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(HamburgerError, match="no CUDA device"):
            pick_device("cuda")


def test_sampled_rows_do_not_depend_on_their_batch(tiny_dir):
    """Each row draws with its own (temperature, top_p, seed): alone or in a batch, the same tokens."""
    from transformers import AutoTokenizer, LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(tiny_dir).double().eval()
    tok = AutoTokenizer.from_pretrained(tiny_dir)
    prompts = [chat_prompt_ids(tok, p) for p in PROMPTS[:4]]
    draws = [(0.0, 1.0, 0), (1.5, 1.0, 7), (1.5, 0.9, 8), (1.5, 1.0, 9)]
    together = in_order(model, prompts, 20, draws)
    joined = in_order(model, prompts, 20, draws, batch_size=2, refill_every=3)  # rows leave and join
    alone = [in_order(model, [p], 20, [d])[0] for p, d in zip(prompts, draws)]
    assert together == joined == alone
    assert together[0] == in_order(model, prompts[:1], 20)[0]  # temperature 0: greedy
    other_seed = in_order(model, prompts[1:2], 20, [(1.5, 1.0, 70)])[0]
    assert other_seed != together[1]


def test_a_sampled_row_draws_from_its_own_generator_one_uniform_a_token(tiny_dir):
    """The spec of a sampled answer, step by step without a cache: the base's float32 logits of the text so far, and
    `draw_rows` at the next uniform of a generator seeded by the row's seed; EOS ends it."""
    from transformers import AutoTokenizer, LlamaForCausalLM

    from hamburger.engine.sampling import draw_rows

    model = LlamaForCausalLM.from_pretrained(tiny_dir).double().eval()
    prompt = chat_prompt_ids(AutoTokenizer.from_pretrained(tiny_dir), PROMPTS[3])
    for temperature, top_p, seed in ((1.5, 0.9, 7), (1.0, 1.0, 11)):
        generator, text, want = torch.Generator().manual_seed(seed), list(prompt), []
        with torch.no_grad():
            for _ in range(16):
                logits = model(torch.tensor([text])).logits[:, -1].float()
                uniform = torch.rand(1, generator=generator, dtype=torch.float64)
                token = int(draw_rows(logits, torch.tensor([temperature], dtype=torch.float64),
                                      torch.zeros(1, dtype=torch.long), torch.tensor([top_p], dtype=torch.float64),
                                      uniform)[0])
                if token == 2:
                    break
                want.append(token)
                text.append(token)
        got = in_order(model, [prompt], 16, [(temperature, top_p, seed)], batch_size=1)[0][0]
        assert got == want and len(set(want)) > 3


def test_sampled_answers_from_sample_ids_equal_the_samples_option(tiny_dir, prompts_file, tmp_path):
    """recipes/sampled_prompts.py's route (ids ID#s<n>, answers drawn as the main ones at --temperature) writes the
    very answers that --samples writes under those ids: each row's draws are seeded by (seed, row id) alone."""
    both, alone = tmp_path / "both.jsonl", tmp_path / "alone.jsonl"
    assert run(distill_args(tiny_dir, prompts_file, both, "--samples", "2", "--sample-temperature", "1.5",
                            "--sample-top-p", "0.9", "--seed", "3", "--limit", "4")) == 0
    ids = tmp_path / "s1.jsonl"
    ids.write_text("".join(json.dumps({**r, "id": DS.sample_id(r["id"], 1)}) + "\n"
                           for r in read_jsonl(prompts_file)[:4]))
    assert run(distill_args(tiny_dir, ids, alone, "--temperature", "1.5", "--top-p", "0.9", "--seed", "3",
                            "--batch-size", "3")) == 0
    sampled = {r["id"]: r["response_token_ids"] for r in read_jsonl(both) if r["sample"] == 1}
    assert {r["id"]: r["response_token_ids"] for r in read_jsonl(alone)} == sampled and len(sampled) == 4


def without_entropies(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in ("entropies", "token_probs")}


def test_distill_samples_beside_the_greedy_answer(tiny_dir, prompts_file, tmp_path, capsys):
    greedy, out = tmp_path / "g.jsonl", tmp_path / "s.jsonl"
    samples = ["--samples", "3", "--sample-temperature", "1.5", "--limit", "3"]
    assert run(distill_args(tiny_dir, prompts_file, greedy, "--limit", "3")) == 0
    assert "samples" not in json.loads((tmp_path / "g.jsonl.meta.json").read_text())["settings"]
    assert run(distill_args(tiny_dir, prompts_file, out, *samples)) == 0
    rows = {r["id"]: r for r in read_jsonl(out)}
    assert sorted(rows) == sorted(f"p{i}{s}" for i in range(3) for s in ("", "#s1", "#s2"))
    assert [rows[f"p1{s}"]["sample"] for s in ("", "#s1", "#s2")] == [0, 1, 2]
    for r in read_jsonl(greedy):
        assert rows[r["id"]]["response_token_ids"] == r["response_token_ids"]  # sample 0 is the greedy answer
    assert any(rows[f"p{i}#s{s}"]["response_token_ids"] != rows[f"p{i}"]["response_token_ids"]
               for i in range(3) for s in (1, 2))
    # killed after 4 rows and half a line, resumed in other batches: every row as before
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:4]) + lines[4][:20])
    assert run(distill_args(tiny_dir, prompts_file, out, *samples, "--batch-size", "2")) == 0
    assert "5 responses to do" in capsys.readouterr().err
    again = {r["id"]: r for r in read_jsonl(out)}
    assert {k: without_entropies(r) for k, r in again.items()} == {k: without_entropies(r) for k, r in rows.items()}
    assert max(abs(x - y) for k, r in again.items() for x, y in zip(r["entropies"], rows[k]["entropies"])) \
        <= 2e-4  # (their last decimal may round otherwise in other batches)
    for changed in (["--samples", "2"], ["--sample-temperature", "1.0"], ["--sample-top-p", "0.5"]):
        with pytest.raises(HamburgerError, match="other settings"):
            run(distill_args(tiny_dir, prompts_file, out, *samples, *changed))
    with pytest.raises(HamburgerError, match="--samples >= 1, --sample-temperature > 0"):
        run(distill_args(tiny_dir, prompts_file, tmp_path / "x.jsonl", "--samples", "2", "--sample-temperature", "0"))


def refuse_base(monkeypatch):
    """From here on, loading a base model fails: a run with nothing left to write must end before it."""
    from hamburger.core import base as B

    def refuse(*args, **kwargs):
        raise AssertionError("the base was loaded")
    monkeypatch.setattr(B, "load_base", refuse)


def test_distill_with_nothing_left_does_not_load_the_base(tiny_dir, prompts_file, tmp_path, capsys, monkeypatch):
    import shutil

    out, sidecar = tmp_path / "d.jsonl", tmp_path / "d.jsonl.meta.json"
    assert run(distill_args(tiny_dir, prompts_file, out)) == 0  # every prompt but the empty one
    before, meta = out.read_bytes(), sidecar.read_text()
    other_base = shutil.copytree(tiny_dir, tmp_path / "same-weights-other-name")
    more = tmp_path / "more.jsonl"
    more.write_text(prompts_file.read_text() + json.dumps({"id": "new", "prompt": "One more?"}) + "\n")
    capsys.readouterr()
    with monkeypatch.context() as m:
        refuse_base(m)
        assert run(distill_args(tiny_dir, prompts_file, out)) == 0
        assert "nothing to do" in capsys.readouterr().err
        assert out.read_bytes() == before and sidecar.read_text() == meta
        # other settings, another base, or a prompt not done yet: those need the base
        for argv in (distill_args(tiny_dir, prompts_file, out, "--max-new-tokens", "25"),
                     distill_args(tiny_dir, prompts_file, out, "--temperature", "0.5"),
                     distill_args(other_base, prompts_file, out), distill_args(tiny_dir, more, out)):
            with pytest.raises(AssertionError, match="the base was loaded"):
                run(argv)
    assert run(distill_args(tiny_dir, more, out)) == 0
    assert len(read_jsonl(out)) == 7


def test_segment_with_nothing_left_does_not_load_the_base(tiny_dir, tmp_path, capsys, monkeypatch):
    import shutil

    data, out = tmp_path / "qa.jsonl", tmp_path / "s.jsonl"
    rows = [{"id": "sum", "question": "What is 1+1?", "answer": "It is 2. #### 2"},
            {"id": "spell", "question": "Spell cat.", "answer": ""},
            {"id": "count", "question": "Count.", "answer": " ".join(str(i) for i in range(200))}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def segment(*extra, base=tiny_dir, source=data):
        return run(["segment", "--base", str(base), "--data", str(source), "--out", str(out), "--prompt-field",
                    "question", "--response-field", "answer", "--max-length", "100", *extra])
    assert segment() == 0
    _, meta = DS.load_dataset(out)
    assert meta["stats"]["left_out"] == {"spell": "empty", "count": "too_long_dropped"}
    before = out.read_bytes()
    other_base = shutil.copytree(tiny_dir, tmp_path / "same-weights-other-name")
    more = tmp_path / "more.jsonl"
    more.write_text(data.read_text() + json.dumps({"id": "yes", "question": "Say yes.", "answer": "Yes."}) + "\n")
    capsys.readouterr()
    with monkeypatch.context() as m:
        refuse_base(m)
        assert segment() == 0
        assert "nothing to do" in capsys.readouterr().out
        _, again = DS.load_dataset(out)
        assert out.read_bytes() == before
        assert again["stats"]["last_run_skipped"] == {"done": 1, "empty": 1, "too_long_dropped": 1}
        assert {k: v for k, v in again["stats"].items() if k != "last_run_skipped"} == \
            {k: v for k, v in meta["stats"].items() if k != "last_run_skipped"}
        # another cut, input rule or base, or a row not done yet: those need the base
        for extra, kw in ((["--max-steps", "3"], {}), (["--long", "truncate"], {}), (["--system", "Be brief."], {}),
                          ([], {"base": other_base}), ([], {"source": more})):
            with pytest.raises(AssertionError, match="the base was loaded"):
                segment(*extra, **kw)
    assert segment(source=more) == 0
    got, meta = DS.load_dataset(out)
    assert [r["id"] for r in got] == ["sum", "yes"] and meta["stats"]["rows"] == 2
    assert meta["stats"]["left_out"] == {"spell": "empty", "count": "too_long_dropped"}
