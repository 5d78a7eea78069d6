"""Wall time per HumanEval completion in the bubblewrap sandbox, next to a bare start of the same Python.

Runs the canonical solution of every HumanEval problem, interleaved: the sandbox (`run_sandboxed`), a
bare `python -I -` of the interpreter the sandbox uses (so sandbox - bare = the isolation's own cost)
and, with `--before REV`, the `run_sandboxed` of an older commit's `hamburger/scorers.py` (e.g. the
monkey-patching one it replaced). Every run must pass.

    python benchmarks/sandbox_cost.py --before 4890cbc --out benchmarks/results/sandbox_cost.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
import types
from pathlib import Path

from hamburger.bench.prompts import humaneval_problems
from hamburger.eval.sandbox import interpreter
from hamburger.eval.scorers import humaneval_program, run_sandboxed


def scorer_at(rev: str):
    """`run_sandboxed` as it was at git revision ``rev`` (a self-contained module then)."""
    source = subprocess.run(["git", "show", f"{rev}:hamburger/scorers.py"], capture_output=True, text=True,
                            check=True, cwd=Path(__file__).parents[1]).stdout
    module = types.ModuleType("scorers_before")
    exec(compile(source, f"{rev}:hamburger/scorers.py", "exec"), module.__dict__)
    return module.run_sandboxed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", default=None, help="git revision whose run_sandboxed is timed too")
    p.add_argument("--limit", type=int, default=164, help="problems (default: all 164)")
    p.add_argument("--out", default=None, help="JSON file for the results")
    args = p.parse_args()
    python = interpreter(os.geteuid() == 0)

    def bare(program: str) -> tuple[bool, str]:
        run = subprocess.run([python, "-I", "-"], input=program, text=True, capture_output=True, timeout=10)
        return run.returncode == 0, run.stderr[-200:]

    methods = {"sandbox": run_sandboxed, "bare": bare}
    if args.before:
        methods["before"] = scorer_at(args.before)
    times: dict[str, list[float]] = {name: [] for name in methods}
    for problem in humaneval_problems()[:args.limit]:
        program = humaneval_program(problem, problem["canonical_solution"])
        for name, run in methods.items():
            start = time.perf_counter()
            ok, reason = run(program)
            times[name].append(1000 * (time.perf_counter() - start))
            if not ok:
                raise SystemExit(f"{name} failed {problem['task_id']}: {reason}")
    summary = {name: {"median_ms": round(statistics.median(t), 1), "p10_ms": round(sorted(t)[len(t) // 10], 1),
                      "p90_ms": round(sorted(t)[9 * len(t) // 10], 1), "runs": len(t)} for name, t in times.items()}
    record = {"summary": summary, "sandbox_python": python, "before": args.before, "cpus": os.cpu_count(),
              "load_average": os.getloadavg()}
    for name, s in summary.items():
        print(f"{name:8s} median {s['median_ms']:6.1f} ms  p10 {s['p10_ms']:6.1f}  p90 {s['p90_ms']:6.1f}  ({s['runs']} runs)")
    print(f"load average {record['load_average'][0]:.1f} on {record['cpus']} CPUs")
    if args.out:
        Path(args.out).write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
