"""Training throughput of `hamburger train` per base mode: response tokens per second (wall and CPU).

    python benchmarks/train_throughput.py --data DATASET.jsonl [--modes frozen,lora,full,lora+kl,full+kl,msd]
        [--steps 4] [--warmup 1] [--batch-size 8 | --max-tokens N] [--threads 1] [--device auto|cpu|cuda]
        [--dtype fp32|bf16] [--loss-chunk N] [--compile [--compile-backend inductor] [--compile-region stack|layer]]
        [--reuse-prompt yes|no] [--config FILE.yaml] [--set key=value ...] [--out RESULT.jsonl]

Each mode runs `--steps` optimizer steps (after `--warmup` untimed steps: use 2-3 with --compile, whose first steps
compile; their wall time is `warmup_s`, and compiled lines count the graphs made) on the same batches. Settings:
`--config` (a `hamburger train` config, e.g. configs/smollm2-gpu-full-fast.yaml), then the mode's, then the
options, then `--set`. Reports wall-clock tok/s (response tokens; on CUDA after a synchronize) and tok/s per CPU-
second of this process: on a shared CPU machine the second one is the figure that does not depend on what else runs
(with --threads 1 it equals the uncontended single-thread speed). On CUDA also the peak GPU memory. `--reuse-prompt
no` times the training forward that runs frozen prompts with the rest (the default runs them once, without
gradients: `HamburgerModel.prompt_states`, only where nothing that trains acts on a prompt slot: frozen base,
scoped LoRA).
Compare settings in separate processes: the CPU's kernels for a shape are made once per process, so a second
trainer on the same batches in one process runs faster than the first (a 1.72x "speed-up" of prompt reuse
measured that way was mostly this). Every line records the machine
(`hamburger.bench.machine`). The GPU measurement of issue 19 (full fine-tune + KL, SmolLM2-135M, one H100):

    python benchmarks/train_throughput.py --data DATASET.jsonl --config configs/smollm2-gpu-full-fast.yaml \\
        --modes full+kl --device cuda --steps 20 --warmup 3 --out train_throughput_h100.jsonl
"""

import argparse
import json
import tempfile
import time

import torch

from hamburger.bench.machine import machine_info
from hamburger.core.modules import COMPILE_REGIONS
from hamburger.train.config import TrainConfig, parse_overrides, read_config_file
from hamburger.train.trainer import Trainer

MODES = {"frozen": {"base_mode": "frozen"}, "lora": {"base_mode": "lora"}, "full": {"base_mode": "full"},
         "lora+kl": {"base_mode": "lora", "kl_weight": 0.2},
         "full+kl": {"base_mode": "full", "kl_weight": 0.5, "stop_target": "accepted"},
         "lora-merged+kl": {"base_mode": "lora", "lora_scope": "merged", "kl_weight": 0.5, "stop_target": "accepted"},
         "msd": {"stage": "msd", "base_mode": "frozen"}}


def settings_for(mode: str, args: argparse.Namespace, out: str) -> dict:
    base = read_config_file(args.config) if args.config else {}
    base.pop("recut", None)  # one cut: every mode sees the stored groups
    settings = {**base, **MODES[mode], "data": args.data, "out": out,
                "max_train_steps": args.steps + args.warmup, "threads": args.threads, "progress": False,
                "save_every": 0, "epochs": 100.0, "eval_data": None, "device": args.device}
    if args.base is not None:
        settings["base"] = args.base
    if args.dtype is not None:
        settings["dtype"] = args.dtype
    if args.loss_chunk is not None:
        settings["loss_chunk"] = args.loss_chunk
    # only --compile compiles: a config's `compile: true` (configs/smollm2-gpu-full-fast.yaml) would spend the
    # window compiling (~11 min on an H100, 2026-11-25) before the first timed step
    settings.update(compile=args.compile, compile_backend=args.compile_backend, compile_region=args.compile_region)
    if args.max_tokens is not None:
        settings["max_tokens"] = args.max_tokens
        settings["batch_size"] = args.batch_size or 0  # only the token budget unless rows are capped too
    elif args.batch_size is not None or "batch_size" not in base:
        settings["batch_size"] = args.batch_size or 8
    return {**settings, **parse_overrides(args.set)}


def compiled_graphs(compiled: bool) -> dict:
    """What torch.compile made so far in this process: graphs, frames compiled, graph breaks."""
    if not compiled:
        return {}
    from torch._dynamo.utils import counters

    return {"graphs": counters["stats"]["unique_graphs"], "frames_ok": counters["frames"]["ok"],
            "graph_breaks": sum(counters["graph_break"].values())}


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--base", default=None)
    ap.add_argument("--config", default=None, help="a `hamburger train` config file: the settings to start from")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one setting (repeatable)")
    ap.add_argument("--modes", default="frozen,lora,full,lora+kl,msd", help=f"comma-separated, of {', '.join(MODES)}")
    ap.add_argument("--steps", type=int, default=4, help="timed optimizer steps")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps first (compile: 2-3)")
    ap.add_argument("--batch-size", type=int, default=None, help="rows per step (default 8 without --max-tokens)")
    ap.add_argument("--max-tokens", type=int, default=None, help="padded base positions per step (batch by tokens)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    ap.add_argument("--dtype", default=None, choices=("fp32", "bf16"), help="default: the config's, else fp32")
    ap.add_argument("--loss-chunk", type=int, default=None, help="response tokens per LM-head/loss chunk (0: off)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the base decoder stack")
    ap.add_argument("--compile-backend", default="inductor")
    ap.add_argument("--compile-region", default="layer", choices=COMPILE_REGIONS,
                    help="compile the whole decoder stack as one graph, or each decoder layer (its code once)")
    ap.add_argument("--reuse-prompt", default="yes", choices=("yes", "no"),
                    help="run frozen prompts once without gradients (yes) or with the rest (no)")
    ap.add_argument("--out", default=None, help="also append each result line to this file")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    reuse_prompt = args.reuse_prompt == "yes"
    for mode in args.modes.split(","):
        with tempfile.TemporaryDirectory() as out:
            cfg = TrainConfig.from_dict(settings_for(mode, args, out))
            trainer = Trainer(cfg)
            trainer.model.reuse_prompt = reuse_prompt
            device = trainer.dist.device
            plan = trainer.plan.steps
            sync(device)
            warmup = time.perf_counter()
            for _, _, rows in plan[:args.warmup]:
                trainer.train_step(rows)
            sync(device)
            warmup = time.perf_counter() - warmup
            timed = plan[args.warmup:]
            tokens = sum(len(trainer.rows[i].response_ids) for _, _, rows in timed for i in rows)
            slots = sum(trainer.rows[i].slots(cfg.single_tail) for _, _, rows in timed for i in rows)
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            sync(device)
            wall, cpu = time.perf_counter(), time.process_time()
            for _, _, rows in timed:
                trainer.train_step(rows)
            sync(device)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            rows_per_step = sum(len(r) for _, _, r in timed) / len(timed)
            result = {"mode": mode, "steps": len(timed), "warmup": args.warmup, "batch_size": cfg.batch_size,
                      "max_tokens": cfg.max_tokens, "rows_per_step": round(rows_per_step, 1), "threads": args.threads,
                      "device": str(device), "dtype": cfg.dtype, "loss_chunk": cfg.loss_chunk,
                      "compile": cfg.compile and cfg.compile_backend,
                      "compile_region": cfg.compile_region if cfg.compile else None, **compiled_graphs(cfg.compile),
                      "base_mode": cfg.base_mode, "stage": cfg.stage,
                      "kl_weight": cfg.kl_weight, "lora_scope": cfg.lora_scope,
                      "prompt_once": reuse_prompt and trainer.objective.prompts_frozen,
                      "adamw": next(iter(trainer.adamw), "default"),
                      "response_tokens": tokens, "base_positions": slots, "warmup_s": round(warmup, 3),
                      "wall_s": round(wall, 3),
                      "tok_s_wall": round(tokens / wall, 1), "tok_s_cpu": round(tokens / cpu, 1),
                      "trainable_params": sum(p.numel() for p in trainer.trainable)}
            if device.type == "cuda":
                result["max_mem_gib"] = round(torch.cuda.max_memory_allocated(device) / 2**30, 2)
            result["machine"] = machine_info(args.threads, cfg.dtype, device.type)
            line = json.dumps(result)
            print(line, flush=True)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(line + "\n")
            del trainer


if __name__ == "__main__":
    main()
