"""Where a full fine-tune + KL step's time goes on this CPU (uncompiled; configs/smollm2-gpu-full-fast.yaml's
settings, 4 rows per step, 2 threads): the KL teacher's share of each step's wall, then torch.profiler's op table
over two steps. Context for issue 19 item 2, not a rule. python step_share.py > step_share.txt"""

import tempfile
import time

import torch

from hamburger.bench.machine import machine_info
from hamburger.train.config import TrainConfig, read_config_file
from hamburger.train.trainer import Trainer


def main() -> None:
    torch.set_num_threads(2)
    base = read_config_file("configs/smollm2-gpu-full-fast.yaml")
    base.pop("recut", None)
    with tempfile.TemporaryDirectory() as out:
        cfg = TrainConfig.from_dict({**base, "data": "data/segmented/smollm2-135m-instruct.train.jsonl", "out": out,
                                     "batch_size": 4, "max_tokens": 0, "compile": False, "max_train_steps": 7,
                                     "epochs": 100.0, "eval_data": None, "save_every": 0, "progress": False,
                                     "device": "cpu", "threads": 2})
        trainer = Trainer(cfg)
        print(machine_info(2, cfg.dtype, "cpu"))
        spent = [0.0]
        teacher = trainer.objective.teacher

        def timed(*args, **kwargs):
            start = time.perf_counter()
            states = teacher(*args, **kwargs)
            spent[0] += time.perf_counter() - start
            return states

        trainer.objective.__dict__["teacher"] = timed
        print("step  wall_s  teacher_s  teacher share")
        for i, (_, _, rows) in enumerate(trainer.plan.steps[:5]):
            spent[0] = 0.0
            start = time.perf_counter()
            trainer.train_step(rows)
            wall = time.perf_counter() - start
            print(f"{i:4}  {wall:6.2f}  {spent[0]:9.2f}  {spent[0] / wall:.3f}")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            for _, _, rows in trainer.plan.steps[5:7]:
                trainer.train_step(rows)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=60))


if __name__ == "__main__":
    main()
