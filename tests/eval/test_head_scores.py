"""Choosing full heads (`eval/head_scores.py`, `hamburger heads`): the teacher-forced folded reading is the decode's
own, the scores rank every head, and the chosen ones land in the checkpoint's config, where verify_fold reads them."""

import json

import pytest
import torch
from transformers import DynamicCache

from hamburger.cli.main import main
from hamburger.core.checkpoint import load_checkpoint
from hamburger.engine.folding import parse_folding
from hamburger.engine.full_heads import head_channels
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration
from hamburger.errors import HamburgerError
from hamburger.eval.head_scores import HeadScore, choose, fold_visibility, score_heads
from tests.helpers import PROMPTS, save_tiny_checkpoint
from tests.verify_helpers import folding_model

FOLD = "segments:2:first:steps=4:p=0.3"  # (a short window and a low cut: the tiny model's answers fold)


@pytest.mark.parametrize("full", [[], [(1, 0)], [(0, 1), (2, 0), (2, 1)]])
def test_the_teacher_forced_folded_reading_is_the_decodes(full, char_tokenizer):
    """One token per forward (as the scores replay the fold), the fold cut on the decode's own distributions: one
    uncached forward under `fold_visibility`'s mask, the full heads reading channel 1, gives the decode's logits."""
    model, folding = folding_model("llama"), parse_folding(FOLD)
    lean, folded = model._lean_stack(), 0
    for prompt in PROMPTS:
        run = VerifyGeneration(model, char_tokenizer, [prompt], DecodingConfig(max_new_tokens=40, ignore_eos=True),
                               draft=0, fold=folding, trace_logits=True, full_heads=full)
        answer, traced = run.run()[0].token_ids, torch.stack(run.logits[0])
        mask = fold_visibility(len(prompt), answer, traced, folding)
        ids = torch.tensor([prompt + answer])
        with torch.no_grad(), head_channels(lean, full, model.base.config):
            final, _ = lean(model.embed(ids), torch.arange(ids.shape[1])[None], mask[None], DynamicCache(), taps=())
        torch.testing.assert_close(model.decode_logits(final[0, len(prompt) - 1:-1]).float(), traced,
                                   rtol=1e-4, atol=1e-4)
        folded += int((mask[1] & ~mask[0]).any(1).sum())
    assert folded > 20, "the test needs folded positions"


def answers_file(tmp_path, model, tokenizer, n: int = 3) -> str:
    path = tmp_path / "answers.jsonl"
    rows = []
    for i, prompt in enumerate(PROMPTS[:n]):
        res = VerifyGeneration(model, tokenizer, [prompt], DecodingConfig(max_new_tokens=40, ignore_eos=True)).run()[0]
        rows.append({"id": str(i), "prompt": tokenizer.decode(prompt), "response_token_ids": res.token_ids})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_every_head_is_scored_and_the_best_are_chosen(tmp_path, char_tokenizer):
    model = folding_model("llama")
    summary, scores = score_heads(model, char_tokenizer, answers_file(tmp_path, model, char_tokenizer),
                                  parse_folding(FOLD), limit=3, min_tokens=30, progress=False)
    assert summary["answers"] == 3 and summary["folded_kl"] > 0 and summary["folded_tail_kl"] >= summary["folded_kl"]
    assert sorted((s.layer, s.kv_head) for s in scores) == [(layer, g) for layer in range(4) for g in range(2)]
    assert [s.kl_gain for s in scores] == sorted((s.kl_gain for s in scores), reverse=True)
    assert scores[0].kl_gain > 0
    assert choose(scores, 2) == sorted([(scores[0].layer, scores[0].kv_head), (scores[1].layer, scores[1].kv_head)])
    assert choose([HeadScore(3, 0, 0.1, 0.0), HeadScore(0, 1, 0.2, 0.0)], 1) == [(0, 1)]
    with pytest.raises(HamburgerError, match="no answer of at least"):
        score_heads(model, char_tokenizer, answers_file(tmp_path, model, char_tokenizer, 1), parse_folding(FOLD),
                    min_tokens=41, progress=False)


def test_cli_heads_saves_the_chosen_heads_where_verify_fold_reads_them(tmp_path, char_tokenizer, capsys):
    model = folding_model("llama")
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer, model)
    answers = answers_file(tmp_path, model, char_tokenizer)
    assert main(["heads", "--model", str(ckpt), "--answers", answers, "--fold", FOLD, "--count", "3", "--limit", "3",
                 "--min-tokens", "30", "--save"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [json.loads(line) for line in lines[:-1]]
    assert rows[0]["answers"] == 3 and len(rows) == 1 + 8 + 1
    chosen = rows[-1]["chosen"]
    assert len(chosen) == 3 and chosen == sorted([r["layer"], r["kv_head"]] for r in rows[1:4])
    assert "saved in" in lines[-1]
    loaded = load_checkpoint(ckpt)[0]
    assert loaded.config.full_heads == chosen
    run = VerifyGeneration(loaded, char_tokenizer, [PROMPTS[0]], DecodingConfig(), fold=parse_folding(FOLD))
    assert run.full_heads == [tuple(h) for h in chosen]
