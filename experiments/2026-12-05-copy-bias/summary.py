"""The tables of README.md from this folder's result files (`run.sh` writes them):
    ../../.venv/bin/python summary.py > summary.md
"""
from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAMES = {"shipped": "shipped", "s64": "session-64 arm, step 241", "gentle": "gentle, step 297",
         "gentle2": "gentle2, step 256", "gentle3": "gentle3, step 256"}


def cell(v: list[float]) -> str:
    return f"{v[0]:+.3f} [{v[1]:+.3f}, {v[2]:+.3f}]"


def main() -> None:
    order = {name: i for i, name in enumerate(NAMES)}  # the shipped model first (its layouts 1f2, 0, 3), then arms
    results = sorted((p for p in HERE.glob("*-*.json") if not p.name.startswith("lookup-")), key=lambda p: (order.get(p.stem.rsplit("-", 1)[0], len(order)),
                                                           p.stem.rsplit("-", 1)[1] != "1f2", p.stem))
    first = json.loads(results[0].read_text())
    print(f"{first['rows']} validation rows ({first['data']}, {first['response_tokens']:,} response tokens), teacher-"
          "forced. Copy mass: the model's probability of the tokens that would repeat an earlier 4-gram of the answer "
          "minus the unmerged base's, at positions where one exists; to / from copy: the share of those positions "
          "where the model's top token repeats and the base's does not / the reverse. Bootstrap 95% over answers.\n")
    print("| model | layout | key | positions | copy mass - base | to copy | from copy |\n|---|---|---|---|---|---|---|")
    for path in results:
        name, layout = path.stem.rsplit("-", 1)
        r = json.loads(path.read_text())
        for key, s in r["keys"].items():
            if key == "prompt":
                continue
            print(f"| {NAMES.get(name, name)} | {layout} | {key} | {s['positions']} | {cell(s['copy_mass_diff'])} | "
                  f"{s['to_copy'][0]:.3f} | {s['from_copy'][0]:.3f} |")
    print(f"\nMachine: {first['machine']['cpu']}, torch {first['machine']['torch']}, {first['machine']['dtype']}, "
          f"{first['machine']['threads']} threads.")


if __name__ == "__main__":
    main()
