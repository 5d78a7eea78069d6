"""The runs of this folder side by side (`python summary.py > summary.txt`): the churn runs' RSS once the store was
full, and the soaks' RSS over their second half (after the store filled)."""

import json
import statistics
from pathlib import Path

HERE = Path(__file__).parent


def main() -> None:
    print("churn (600 prompts, one process, 32 MiB store)")
    for name in ("churn-default", "churn-mmap", "churn-trim"):
        r = json.loads((HERE / f"{name}.json").read_text())
        after = [s["rss_mb"] for s in r["samples"] if s["prompts"] >= r["store_full_at_prompt"]]
        how = r["env"] or ({"trim_every": r["settings"]["trim_every"]} if r["settings"].get("trim_every") else {})
        print(f"  {name:14s} {str(how):38s} RSS when full {after[0]:7.1f} MB, max after {max(after):7.1f}, "
              f"last {after[-1]:7.1f}; {r['samples'][-1]['s']:.1f} s")
    print("soak (420 s, 4 clients, the server's prompt cache 64 MiB)")
    for name in ("soak-before", "soak-trim"):
        r = json.loads((HERE / f"{name}.json").read_text())["results"]
        s = r["samples"]
        full = next(x["t_s"] for x in s if x["prompt_cache_mb"] >= 0.9 * 64)
        half = [x["rss_mb"] for x in s if x["t_s"] >= s[-1]["t_s"] / 2]
        print(f"  {name:12s} {r['requests']} requests, {r['unexpected']} unexpected; store full at {full:.0f} s; RSS "
              f"first {r['rss_mb_first']:.1f}, second half mean {statistics.mean(half):.1f} max {max(half):.1f}, "
              f"last {r['rss_mb_last']:.1f} MB, slope {r['rss_mb_per_min_second_half']:+.2f} MB/min; /health "
              f"p50 {r['health_ms_p50']} ms")


if __name__ == "__main__":
    main()
