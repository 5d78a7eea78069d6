"""Training throughput of `hamburger train` per base mode: response tokens per second (wall and CPU).

    python benchmarks/train_throughput.py --data DATASET.jsonl [--modes frozen,lora,full,lora+kl,msd]
        [--steps 4] [--batch-size 8] [--threads 1]

Each mode runs `--steps` optimizer steps (after one untimed warm-up step) on the same batches.
Reports wall-clock tok/s and tok/s per CPU-second of this process: on a shared machine the second
one is the figure that does not depend on what else runs (with --threads 1 it equals the
uncontended single-thread speed).
"""

import argparse
import json
import tempfile
import time

import torch

from hamburger.train.trainer import Trainer
from hamburger.train.config import TrainConfig

MODES = {"frozen": {}, "lora": {"base_mode": "lora"}, "full": {"base_mode": "full"},
         "lora+kl": {"base_mode": "lora", "kl_weight": 0.2}, "msd": {"stage": "msd"}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--base", default=None)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dtype", default="fp32")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    for mode in args.modes.split(","):
        with tempfile.TemporaryDirectory() as out:
            settings = {"base_mode": "frozen", **MODES[mode], "base": args.base, "data": args.data, "out": out,
                        "batch_size": args.batch_size, "max_train_steps": args.steps + 1, "threads": args.threads,
                        "progress": False, "save_every": 0, "dtype": args.dtype, "epochs": 100.0}
            trainer = Trainer(TrainConfig.from_dict(settings))
            plan = trainer.plan.steps
            trainer.train_step(plan[0][2])  # warm-up
            tokens = sum(len(trainer.rows[i].response_ids) for _, _, rows in plan[1:] for i in rows)
            slots = sum(trainer.rows[i].slots for _, _, rows in plan[1:] for i in rows)
            wall, cpu = time.perf_counter(), time.process_time()
            for _, _, rows in plan[1:]:
                trainer.train_step(rows)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            print(json.dumps({"mode": mode, "steps": args.steps, "batch_size": args.batch_size,
                              "threads": args.threads, "dtype": args.dtype, "response_tokens": tokens,
                              "base_positions": slots, "wall_s": round(wall, 1),
                              "tok_s_wall": round(tokens / wall, 1), "tok_s_cpu": round(tokens / cpu, 1),
                              "trainable_params": sum(p.numel() for p in trainer.trainable)}), flush=True)
            del trainer


if __name__ == "__main__":
    main()
