"""The fast training path equals the plain one: chunked LM head + losses (`loss_chunk`), torch.compile
(`compile`), fused AdamW (CUDA only; the CPU keeps torch's default), and resuming runs saved before these settings."""

import json

import pytest
import torch

from hamburger.errors import HamburgerError
from hamburger.train.batching import collate
from hamburger.train.config import TrainConfig
from hamburger.train.objective import batch_stats, summarize
from hamburger.train.trainer import Trainer, adamw_options
from tests.helpers import perturb_lora, train_config as config

CHUNK = 7  # response tokens per chunk: several chunks per batch and a ragged last one


def forward_backward(trainer: Trainer, chunk: int, rows: list[int]):
    """One forward + backward at ``loss_chunk`` = chunk on the same weights: (output, {param: grad})."""
    trainer.model.loss_chunk = chunk
    trainer.optimizer.zero_grad(set_to_none=True)
    cfg = trainer.model.config
    out = trainer.net(collate([trainer.rows[i] for i in rows], cfg.max_steps, single_tail=cfg.single_tail))
    out.loss.backward()
    grads = {n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.requires_grad and p.grad is not None}
    trainer.optimizer.zero_grad(set_to_none=True)
    return out, grads


MODES = {
    "frozen": dict(base_mode="frozen"),
    "frozen+kl+accepted": dict(base_mode="frozen", kl_weight=0.5, stop_target="accepted"),
    "lora+kl": dict(base_mode="lora", kl_weight=0.5),
    "lora-merged+kl": dict(base_mode="lora", lora_scope="merged", kl_weight=0.5),
    "lora-merged+mixed-kl": dict(base_mode="lora", lora_scope="merged", kl_weight=0.5, kl_mix=0.5,
                                 token_loss_weight=0.0),
    "full+kl+accepted": dict(base_mode="full", kl_weight=0.5, stop_target="accepted"),
    "msd": dict(stage="msd", base_mode="frozen"),
    "msd-all+kl": dict(stage="msd", base_mode="frozen", msd_chains="all", stop_target="accepted", kl_weight=1.0),
    "lora-merged+kl+windows": dict(base_mode="lora", lora_scope="merged", kl_weight=0.5, stop_target="accepted",
                                   msd_chains="windows"),
    "lora-merged+kl+hidden": dict(base_mode="lora", lora_scope="merged", kl_weight=0.5, hidden_weight=2.0),
    "full+kl+hidden": dict(base_mode="full", kl_weight=0.5, hidden_weight=2.0, hidden_layers=[0, 1]),
    "msd-all+kl+context": dict(stage="msd", base_mode="frozen", msd_chains="all", stop_target="accepted", kl_weight=1.0,
                               msd_context=3),
    "lora-merged+kl+windows+context": dict(base_mode="lora", lora_scope="merged", kl_weight=0.5, stop_target="accepted",
                                           msd_chains="windows", msd_context=3),
    "lora-merged+kl+hidden+tail": dict(base_mode="lora", lora_scope="merged", kl_weight=0.5, hidden_weight=2.0,
                                       single_tail=1),
}


@pytest.mark.parametrize("mode", list(MODES))
def test_chunked_losses_and_gradients_equal_the_plain_path(env, tmp_path, mode):
    trainer = Trainer(config(env, tmp_path, **MODES[mode]))
    if trainer.cfg.base_mode == "lora":
        perturb_lora(trainer)
    if trainer.cfg.base_mode == "full":  # move the trained base away from its teacher copy
        with torch.no_grad():
            for p in trainer.model.base.parameters():
                p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(2)) * 0.02)
    rows = trainer.plan.steps[0][2]
    plain, plain_grads = forward_backward(trainer, 0, rows)
    chunked, chunked_grads = forward_backward(trainer, CHUNK, rows)
    assert plain.targets.numel() > 3 * CHUNK and plain.targets.numel() % CHUNK  # several chunks, a ragged last one
    assert plain.token_logits is not None and chunked.token_logits is None
    assert torch.equal(plain.predictions, plain.token_logits.argmax(-1))
    assert torch.equal(chunked.predictions, plain.predictions)
    assert torch.equal(chunked.stop_targets, plain.stop_targets)  # (stop_target accepted reads the predictions)
    if trainer.cfg.stop_target == "accepted":  # labels beyond the group ends: made from the predictions
        group_end = torch.cat([plain.micro_index[1:] == 0, torch.tensor([True])]).float()
        assert (plain.stop_targets > group_end).any()
    for name in ("loss", "token_loss", "stop_loss", "kl", "hidden"):
        a, b = getattr(plain, name), getattr(chunked, name)
        off = {"kl": trainer.cfg.kl_weight == 0, "hidden": trainer.cfg.hidden_weight == 0}.get(name, False)
        assert (a is None) == (b is None) == off, name
        if a is not None:
            torch.testing.assert_close(b, a, rtol=1e-6, atol=1e-7, msg=name)
    if trainer.cfg.kl_weight:
        assert plain.kl > 1e-3  # the KL is really there
    if trainer.cfg.hidden_weight:  # so is the hidden-state term
        assert plain.hidden > 1e-4
    assert plain_grads.keys() == chunked_grads.keys() and plain_grads
    assert any(n.startswith("base.") for n in plain_grads) == (trainer.cfg.base_mode != "frozen")
    assert sum(float(g.abs().sum()) for g in plain_grads.values()) > 0
    for name, g in plain_grads.items():  # (absolute tolerance: relative to the largest entry of the gradient)
        torch.testing.assert_close(chunked_grads[name], g, rtol=1e-5, atol=1e-5 * float(g.abs().max()) + 1e-12,
                                   msg=lambda m: f"{name}: {m}")
    sa, sb = (batch_stats(o, 4, 0, 0) for o in (plain, chunked))
    # (summed in another order: float32 rounding, larger on CPUs whose kernels take AVX-512 paths)
    torch.testing.assert_close(sb, sa, rtol=1e-5, atol=1e-6)


def test_chunked_path_under_bf16_autocast(env, tmp_path):
    """Each chunk's recompute in backward runs under the forward's autocast (else checkpointing would refuse the
    recomputed tensors' dtypes): bf16 losses and gradients equal the plain path's up to bf16 rounding."""
    trainer = Trainer(config(env, tmp_path, base_mode="full", kl_weight=0.5, stop_target="accepted", dtype="bf16"))
    rows = trainer.plan.steps[0][2]
    with trainer._autocast():
        (plain, plain_grads), (chunked, chunked_grads) = (forward_backward(trainer, c, rows) for c in (0, CHUNK))
    assert plain.token_logits.dtype == torch.float32 and chunked.token_logits is None
    for name in ("loss", "token_loss", "stop_loss", "kl"):
        torch.testing.assert_close(getattr(chunked, name), getattr(plain, name), rtol=1e-5, atol=1e-6)
    assert torch.equal(chunked.stop_targets, plain.stop_targets)
    for name, g in plain_grads.items():
        torch.testing.assert_close(chunked_grads[name], g, rtol=0.02, atol=0.01 * float(g.abs().max()) + 1e-12,
                                   msg=lambda m: f"{name}: {m}")


def test_chunked_path_keeps_no_token_by_vocabulary_tensor_for_backward(env, tmp_path):
    trainer = Trainer(config(env, tmp_path, base_mode="lora", kl_weight=0.5))
    head = trainer.model.base.get_output_embeddings().weight
    vocab = head.shape[0]
    batch = collate([trainer.rows[i] for i in trainer.plan.steps[0][2]], 4)

    def largest_saved_logits(chunk: int) -> int:
        """Rows of the largest [rows, vocab] tensor autograd keeps for backward (checkpointed chunks keep none)."""
        trainer.model.loss_chunk = chunk
        rows = [0]

        def pack(t):
            if t.ndim == 2 and t.shape[-1] == vocab and t.untyped_storage().data_ptr() != head.data_ptr():
                rows[0] = max(rows[0], t.shape[0])
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = trainer.net(batch)
        out.loss.backward()
        return rows[0], out.targets.numel()

    kept, tokens = largest_saved_logits(0)
    assert kept == tokens  # today's path keeps [T, V] logits
    assert largest_saved_logits(CHUNK)[0] == 0


def test_chunked_training_steps_equal_plain_steps_and_eval(env, tmp_path):
    def run(chunk):
        t = Trainer(config(env, tmp_path / f"c{chunk}", base_mode="lora", kl_weight=0.5, stop_target="accepted",
                           loss_chunk=chunk, eval_data=env["data"], eval_max_rows=8))
        assert t.model.loss_chunk == chunk
        assert t.train() == 0
        lines = [json.loads(x) for x in (tmp_path / f"c{chunk}" / "metrics.jsonl").read_text().splitlines()]
        return t, lines

    (a, la), (b, lb) = run(0), run(CHUNK)
    for name, p in a.model.named_parameters():
        if p.requires_grad:
            torch.testing.assert_close(dict(b.model.named_parameters())[name], p, rtol=1e-5, atol=1e-6, msg=name)
    train_a, train_b = ([x for x in lines if x["kind"] in ("train", "eval")] for lines in (la, lb))
    assert len(train_a) == len(train_b) == 4
    for x, y in zip(train_a, train_b):
        for key in ("loss", "token_loss", "stop_loss", "kl", "token_acc", "stop_acc"):
            assert y[key] == pytest.approx(x[key], rel=1e-5, abs=1e-7), key
        assert x["token_acc_micro"] == y["token_acc_micro"]


def test_tok_s_counts_response_tokens_not_msd_chain_predictions(env, tmp_path):
    trainer = Trainer(config(env, tmp_path, stage="msd", base_mode="frozen", msd_chains="all",
                             stop_target="accepted", max_train_steps=1))
    rows = trainer.plan.steps[0][2]
    s = trainer.train_step(rows)
    m = summarize(s, 4, 0.0, 0.5)
    response = sum(len(trainer.rows[i].response_ids) for i in rows)
    assert m["response_tokens"] == response and m["tokens"] > 2 * response  # each token is in up to 4 chains


@pytest.mark.parametrize("region,base_mode", [("stack", "lora"), ("layer", "lora"), ("layer", "full")])
def test_compiled_step_equals_eager_step(env, tmp_path, region, base_mode):
    """compile: the decoder stack under torch.compile (backend eager: traced forward and backward, no codegen),
    whole or layer by layer, gives the eager losses and weights after one step, the KL teacher compiled too. Scoped
    LoRA computes the prompts once, through a KV cache, which compiles the whole stack in either region (one entry);
    a full fine-tune has no cached forward, so its stack and the teacher copy's are compiled layer by layer."""
    kw = dict(base_mode=base_mode, kl_weight=0.5, max_train_steps=1, loss_chunk=CHUNK)
    if base_mode == "lora":
        kw["lora_scope"] = "merged"
    eager = Trainer(config(env, tmp_path / "eager", **kw))
    compiled = Trainer(config(env, tmp_path / "compiled", compile=True, compile_backend="eager",
                              compile_region=region, **kw))
    if base_mode == "lora":
        for t in (eager, compiled):
            perturb_lora(t)
    rows = eager.plan.steps[0][2]
    sa, sb = eager.train_step(rows), compiled.train_step(rows)
    wholes = [whole for _, whole, _ in compiled.model._compiled_train]
    assert wholes == ([True] if base_mode == "lora" else [False, False]) and not eager.model._compiled_train
    torch.testing.assert_close(sb, sa, rtol=1e-5, atol=1e-6)
    for name, p in eager.model.named_parameters():
        if p.requires_grad:
            torch.testing.assert_close(dict(compiled.model.named_parameters())[name], p, rtol=1e-5, atol=1e-6,
                                       msg=name)


@pytest.mark.parametrize("hidden_weight", [0.0, 0.5])
def test_layer_region_compiles_one_layer_code_for_all(env, tmp_path, hidden_weight):
    """compile_region layer: the stack's layers become compiled wrappers of the same layer objects (the plain stack,
    which decoding runs, is untouched), and dynamo makes one graph per grad mode, not one per layer: a full
    fine-tune with KL, whose teacher copy's layers reuse the code too, with or without the hidden-state term's hooks.
    (Before the teacher's forward said use_cache=False, each layer's cache entry made it recompile; before every layer
    ran the same state hook, each layer's own hook did.)"""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    trainer = Trainer(config(env, tmp_path, base_mode="full", kl_weight=0.5, hidden_weight=hidden_weight,
                             max_train_steps=1, compile=True, compile_backend="eager", compile_region="layer"))
    plain = trainer.model.base.model
    trainer.train_step(trainer.plan.steps[0][2])
    compiled = {stack: form for stack, _, form in trainer.model._compiled_train}
    assert len(compiled) == 2  # the trained base's stack and the teacher copy's
    layered = compiled[plain]
    assert not any(isinstance(layer, torch._dynamo.eval_frame.OptimizedModule) for layer in plain.layers)
    assert [layer._orig_mod for layer in layered.layers] == list(plain.layers)
    assert [id(p) for p in layered.parameters()] == [id(p) for p in plain.parameters()]
    assert counters["stats"]["unique_graphs"] == 2  # the student's layers (grad) and the teacher's (no grad)


def test_settings_are_checked_and_cpu_adamw_is_the_default(env, tmp_path):
    with pytest.raises(HamburgerError, match="loss_chunk must be >= 0"):
        config(env, tmp_path, loss_chunk=-1)
    with pytest.raises(HamburgerError, match="compile_backend must be"):
        config(env, tmp_path, compile=True, compile_backend="nonsense")
    with pytest.raises(HamburgerError, match="compile must be bool"):
        config(env, tmp_path, compile="yes")
    with pytest.raises(HamburgerError, match="compile_region must be one of"):
        config(env, tmp_path, compile=True, compile_region="block")
    assert adamw_options(torch.device("cpu")) == {}
    assert adamw_options(torch.device("cuda", 0)) == {"fused": True}
    assert adamw_options(torch.device("cuda", 0), fsdp=True) == {"foreach": True}
    trainer = Trainer(config(env, tmp_path))
    group = trainer.optimizer.param_groups[0]
    assert not group["fused"] and not group["foreach"]  # CPU: the per-parameter loop, as before


def test_resume_a_run_saved_before_the_fast_settings(env, tmp_path):
    """A trainer state whose config lacks loss_chunk/compile/compile_backend/compile_region resumes, with or without
    them."""
    kw = dict(base_mode="lora", kl_weight=0.5, max_train_steps=4, save_every=2)
    straight = Trainer(config(env, tmp_path / "a", **kw))
    assert straight.train() == 0

    def stop_at_2(trainer):
        if trainer.step == 2:
            trainer.stop_signal = 15

    first = Trainer(config(env, tmp_path / "b", **kw))
    assert first.train(on_step=stop_at_2) == 128 + 15
    state_file = tmp_path / "b" / "last" / "trainer_state.pt"
    state = torch.load(state_file, weights_only=True)
    old = json.loads(state["config"])
    for key in ("loss_chunk", "compile", "compile_backend", "compile_region"):
        del old[key]
    state["config"] = json.dumps(old)
    torch.save(state, state_file)
    resumed = Trainer(config(env, tmp_path / "b", loss_chunk=CHUNK, **kw), resume=True)
    assert resumed.step == 2 and resumed.train() == 0
    for name, p in straight.model.named_parameters():
        if p.requires_grad:
            torch.testing.assert_close(dict(resumed.model.named_parameters())[name], p, rtol=1e-5, atol=1e-6,
                                       msg=name)


def test_every_shipped_config_loads_and_the_gpu_one_is_fast():
    from hamburger.train.config import read_config_file
    from tests.helpers import ROOT

    configs = {p.name: TrainConfig.from_dict(read_config_file(p), str(p)) for p in (ROOT / "configs").glob("*.yaml")}
    fast = configs["smollm2-gpu-full-fast.yaml"]
    assert (fast.base_mode, fast.dtype, fast.compile, fast.stop_target) == ("full", "bf16", True, "accepted")
    assert fast.loss_chunk > 0 and fast.kl_weight > 0 and fast.max_tokens > 0 and fast.batch_size == 0


def test_resume_may_switch_to_bf16_but_not_change_the_recipe(env, tmp_path):
    """dtype is a speed setting (fp32 master weights and optimizer state either way); a learning rate is not."""
    kw = dict(base_mode="lora", kl_weight=0.5, max_train_steps=4, save_every=2)

    def stop_at_2(trainer):
        if trainer.step == 2:
            trainer.stop_signal = 15

    assert Trainer(config(env, tmp_path, **kw)).train(on_step=stop_at_2) == 128 + 15
    with pytest.raises(HamburgerError, match="differ from the run's.*lr_base"):
        Trainer(config(env, tmp_path, lr_base=5e-4, **kw), resume=True)
    resumed = Trainer(config(env, tmp_path, dtype="bf16", **kw), resume=True)
    assert resumed.step == 2 and resumed.train() == 0 and resumed.step == 4


PROMPT_MODES = {k: MODES[k] for k in ("frozen", "frozen+kl+accepted", "lora-merged+kl", "lora-merged+kl+windows")}
PROMPT_MODES["lora-after-merge+kl"] = dict(base_mode="lora", lora_scope="after_merge", kl_weight=0.5)
PROMPT_MODES["lora-two-sets+kl"] = dict(base_mode="lora", lora_scope="merged_and_after", kl_weight=0.5)
PROMPT_MODES["lora-merged+kl+hidden"] = MODES["lora-merged+kl+hidden"]
PROMPT_MODES["lora-merged+kl+windows+context"] = MODES["lora-merged+kl+windows+context"]
PROMPT_MODES["lora-merged+kl+hidden+tail"] = MODES["lora-merged+kl+hidden+tail"]
PROMPT_MODES["lora-two-sets+kl+windows+hidden"] = dict(base_mode="lora", lora_scope="merged_and_after", kl_weight=0.5,
                                                        msd_chains="windows", stop_target="accepted", hidden_weight=2.0,
                                                        hidden_layers=[1])


@pytest.mark.parametrize("mode", list(PROMPT_MODES))
@pytest.mark.parametrize("chunk", [0, CHUNK])
def test_prompts_run_once_without_gradients_give_the_same_losses_and_gradients(env, tmp_path, mode, chunk):
    """Where nothing that trains acts on a prompt slot (frozen base, scoped LoRA), the prompts run once without
    gradients and the teacher and training forward run only what follows them: same outputs and gradients."""
    trainer = Trainer(config(env, tmp_path, **PROMPT_MODES[mode]))
    if trainer.cfg.base_mode == "lora":
        perturb_lora(trainer)
    assert not trainer.model.prompt_trains()
    rows = trainer.plan.steps[0][2]
    trainer.model.reuse_prompt = False
    whole, whole_grads = forward_backward(trainer, chunk, rows)
    trainer.model.reuse_prompt = True
    calls = []
    hook = trainer.model.register_forward_pre_hook(lambda m, args: calls.append(args[2] is not None))
    once, once_grads = forward_backward(trainer, chunk, rows)
    hook.remove()
    assert calls == [True]  # the reusing path was taken
    assert torch.equal(once.predictions, whole.predictions) and torch.equal(once.targets, whole.targets)
    assert torch.equal(once.stop_targets, whole.stop_targets)
    for name in ("loss", "token_loss", "stop_loss", "kl", "hidden"):
        a, b = getattr(whole, name), getattr(once, name)
        assert (a is None) == (b is None)
        if a is not None:
            torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6, msg=name)
    torch.testing.assert_close(once.stop_logits, whole.stop_logits, rtol=1e-5, atol=1e-5)
    assert once_grads.keys() == whole_grads.keys() and whole_grads
    assert any(n.startswith("base.") for n in whole_grads) == (trainer.cfg.base_mode == "lora")
    last = f".layers.{trainer.model.base.config.num_hidden_layers - 1}."
    for name, g in whole_grads.items():
        # with a single tail no merged slot's own output is read: the last layer's adapters there act on nothing else
        # than its keys and values
        unread = trainer.model.config.single_tail and last in name and not ("k_proj" in name or "v_proj" in name)
        assert float(g.abs().sum()) > 0 or name.startswith("embedder.") or unread, name
        # (absolute tolerance relative to the gradient's largest entry: the two orders of the same sums round
        # differently, more so on CPUs whose kernels take AVX-512 paths)
        torch.testing.assert_close(once_grads[name], g, rtol=1e-4, atol=1e-4 * float(g.abs().max()) + 1e-12,
                                   msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("mode", ["lora+kl", "full+kl+accepted"])
def test_prompts_that_train_are_run_with_gradients(env, tmp_path, mode):
    trainer = Trainer(config(env, tmp_path, **MODES[mode]))
    assert trainer.model.prompt_trains()
    calls = []
    hook = trainer.model.register_forward_pre_hook(lambda m, args: calls.append(len(args) > 2 and args[2] is not None))
    trainer.net(collate([trainer.rows[i] for i in trainer.plan.steps[0][2]], 4))
    hook.remove()
    assert calls == [False]


def test_prompt_states_cover_batches_of_prompt_and_one_group_only(env, tmp_path):
    """A batch whose every response is one group runs nothing after the prompts: the prompts' states alone."""
    from hamburger.core.packing import TrainBatch

    trainer = Trainer(config(env, tmp_path, base_mode="frozen", kl_weight=0.5))
    batch = TrainBatch([[1, 5, 6], [1, 7]], [[8, 9], [10, 11, 12]], [[2], [3]])
    model = trainer.model
    with torch.no_grad():
        model.reuse_prompt = False
        whole = trainer.net(batch)
        model.reuse_prompt = True
        once = trainer.net(batch)
    torch.testing.assert_close(once.loss, whole.loss, rtol=1e-5, atol=1e-6)
    assert torch.equal(once.predictions, whole.predictions)


@pytest.mark.parametrize("mode", ["frozen+kl+accepted", "lora-merged+kl", "full+kl+accepted", "msd"])
def test_bf16_training_stores_frozen_linears_in_bf16_with_bit_identical_steps(env, tmp_path, mode):
    """Under bf16 autocast the frozen linear weights (base, LoRA base layers, the full fine-tune's teacher copy) are
    stored in bf16 once instead of cast on every call: the same step, bit for bit, as with fp32 storage."""
    from hamburger.core.lora import lora_modules

    def trainer(name):
        t = Trainer(config(env, tmp_path / name, dtype="bf16", max_train_steps=2, **MODES[mode]))
        if t.cfg.base_mode == "lora":
            perturb_lora(t)
        return t

    cast, kept = trainer("cast"), trainer("kept")
    linears = [m for m in kept.model.base.modules() if type(m) is torch.nn.Linear
               and m is not kept.model.base.get_output_embeddings()]
    frozen = [m for m in linears if not m.weight.requires_grad]
    assert bool(frozen) == (kept.cfg.base_mode != "full")
    assert all(m.weight.dtype == torch.bfloat16 for m in frozen)
    if kept.cfg.base_mode == "lora":
        assert all(m.lora_A.dtype == torch.float32 for _, m in lora_modules(kept.model.base))
    for base in (kept.model.base, kept.objective.teacher_base):  # `kept`: fp32 storage, as bf16 runs had before
        for m in base.modules() if base is not None else ():
            if type(m) is torch.nn.Linear and m.weight.dtype == torch.bfloat16:
                m.float()
    if kept.objective.teacher_base is not None:
        assert kept.objective.teacher_base.model.layers[0].mlp.up_proj.weight.dtype == torch.float32
        assert cast.objective.teacher_base.model.layers[0].mlp.up_proj.weight.dtype == torch.bfloat16
    assert kept.model.base.get_input_embeddings().weight.dtype == torch.float32
    for step in range(2):
        rows = cast.plan.steps[step][2]
        assert torch.equal(cast.train_step(rows), kept.train_step(rows))
    for (name, a), b in zip(cast.model.named_parameters(), kept.model.parameters()):
        if a.requires_grad:
            assert torch.equal(a, b), name
