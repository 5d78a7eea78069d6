"""Writing a benchmark run: raw JSON (with machine facts), a markdown table and PNG plots."""

from __future__ import annotations

import json
from pathlib import Path

from hamburger.bench.machine import machine_info

COLUMNS = [("method", "method", "{}"), ("decode_tok_s", "decode tok/s", "{:.1f}"),
           ("tok_s_min", "tok/s range over repetitions", None),
           ("speedup_vs_hf", "speedup vs HF", "{:.2f}x"), ("tau", "tau", "{:.2f}"), ("ttft_ms", "TTFT ms", "{:.0f}"),
           ("kv_bytes_per_token", "output KV bytes/token", "{:,.0f}"), ("kv_vs_hf", "KV vs HF (whole cache)", "{:.2f}"),
           ("identical_to_base", "same as base", "{:.0%}"),
           ("matched_prefix", "matched prefix", "{:.0%}"), ("base_read_gbs", "base read GB/s", "{:.1f}")]


def _cell(row: dict, key: str, fmt: str | None) -> str:
    if key == "tok_s_min":
        low, high = row.get("tok_s_min"), row.get("tok_s_max")
        return "-" if low is None else f"{low:.1f}-{high:.1f}"
    value = row.get(key)
    return "-" if value is None else fmt.format(value)


def copy_bandwidth(result: dict) -> str:
    """The machine's copy bandwidth as measured when the run began (without a bench log: after it), or in each
    session of a resumed run."""
    measured = [s["copy_bandwidth_gbs"] for s in result.get("sessions", []) if s.get("copy_bandwidth_gbs")]
    if len(measured) > 1:
        return " / ".join(f"{gbs:.1f}" for gbs in measured) + " GB/s in its sessions"
    return f"{result['copy_bandwidth_gbs']:.1f} GB/s"


def markdown(result: dict) -> str:
    m, settings = result["machine"], result["settings"]
    lines = [f"# Benchmark: {result['model']['checkpoint']} on {result['model']['base']}", "",
             f"{m['cpu']} ({m['cores']} cores), {m['threads']} threads, {m['dtype']}, torch {m['torch']}, "
             f"transformers {m['transformers']}, env {m['env']}; copy bandwidth {copy_bandwidth(result)}; "
             f"greedy, {result['settings']['max_new_tokens']} new tokens, "
             f"median of {result['settings']['repeats']} runs; peak RSS {result['peak_rss_mib']:.0f} MiB.", ""]
    if settings.get("device", "cpu") != "cpu" or settings.get("compile"):
        lines += [f"Device {m.get('gpu') or settings.get('device')}; "
                  + (f"GPU mode: static KV caches, per-step forwards compiled (torch.compile backend "
                     f"{settings['compile']}) for HAMburger, our own loop and HF generate; prompt lookup and early "
                     "exit eager." if settings.get("compile") else "eager."), ""]
    if len(result.get("sessions", [])) > 1:
        lines += [f"Measured over {len(result['sessions'])} sessions (resumed; each prompt's methods ran in the same "
                  "session; machine facts of each in results.json).", ""]
    for category in dict.fromkeys(s["category"] for s in result["summary"]):
        rows = [s for s in result["summary"] if s["category"] == category]
        lines += [f"## {category} ({rows[0]['prompts']} prompts)", "",
                  "| " + " | ".join(c[1] for c in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        lines += ["| " + " | ".join(_cell(r, k, f) for k, _, f in COLUMNS) + " |" for r in rows]
        lines.append("")
    if result.get("length_sweep"):
        lines += ["## Output length sweep (EOS ignored)", "", "| method | new tokens | base forwards | KV slots | KV bytes |",
                  "|---|---|---|---|---|"]
        lines += [f"| {r['method']} | {r['new_tokens']} | {r['forwards']} | {r['kv_slots']} | {r['kv_bytes']:,} |"
                  for r in result["length_sweep"]]
        lines.append("")
    if result.get("batch_sweep"):
        lines += ["## Batch sweep (generated tokens / wall second)", "", "| method | batch | tok/s |", "|---|---|---|"]
        lines += [f"| {r['method']} | {r['batch_size']} | {r['tok_s']:.1f} |" for r in result["batch_sweep"]]
        lines.append("")
    return "\n".join(lines)


def plots(result: dict, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    overall = [s for s in result["summary"] if s["category"] == "all"]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    values = [s["decode_tok_s"] for s in overall]
    spread = None
    if all(s.get("tok_s_min") is not None for s in overall):  # the repetitions' range as an error bar
        spread = [[max(0.0, v - s["tok_s_min"]) for v, s in zip(values, overall)],
                  [max(0.0, s["tok_s_max"] - v) for v, s in zip(values, overall)]]
    ax.barh([s["method"] for s in overall], values, xerr=spread, color="#c77d2e", ecolor="#444")
    ax.set_xlabel("decode tok/s (all categories; bars: range over repetitions)")
    fig.tight_layout()
    fig.savefig(out / "tok_s.png", dpi=120)
    written.append(out / "tok_s.png")
    plt.close(fig)

    hamburger = sorted((s for s in overall if s["method"].startswith("hamburger@")),
                       key=lambda s: float(s["method"].split("@")[1]))
    if hamburger:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        knob = [float(s["method"].split("@")[1]) for s in hamburger]
        ax.plot(knob, [s["tau"] for s in hamburger], "o-", label="tau")
        ax.set_xlabel("confidence")
        ax.set_ylabel("tau (tokens per base forward)")
        ax2 = ax.twinx()
        ax2.plot(knob, [s["decode_tok_s"] for s in hamburger], "s--", color="#c77d2e", label="tok/s")
        ax2.set_ylabel("decode tok/s")
        fig.tight_layout()
        fig.savefig(out / "confidence_sweep.png", dpi=120)
        written.append(out / "confidence_sweep.png")
        plt.close(fig)

    if result.get("length_sweep"):
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
        for method in dict.fromkeys(r["method"] for r in result["length_sweep"]):
            rs = [r for r in result["length_sweep"] if r["method"] == method]
            axes[0].plot([r["new_tokens"] for r in rs], [r["kv_bytes"] / 2**20 for r in rs], "o-", label=method)
            axes[1].plot([r["new_tokens"] for r in rs], [r["forwards"] for r in rs], "o-", label=method)
        axes[0].set(xlabel="new tokens", ylabel="KV cache MiB")
        axes[1].set(xlabel="new tokens", ylabel="base forwards")
        axes[0].legend()
        fig.tight_layout()
        fig.savefig(out / "length_sweep.png", dpi=120)
        written.append(out / "length_sweep.png")
        plt.close(fig)

    if result.get("batch_sweep"):
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for method in dict.fromkeys(r["method"] for r in result["batch_sweep"]):
            rs = [r for r in result["batch_sweep"] if r["method"] == method]
            ax.plot([r["batch_size"] for r in rs], [r["tok_s"] for r in rs], "o-", label=method)
        ax.set(xlabel="batch size", ylabel="generated tok/s", xscale="log")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "batch_sweep.png", dpi=120)
        written.append(out / "batch_sweep.png")
        plt.close(fig)
    return written


def write_report(result: dict, out: Path) -> Path:
    """Write results.json, results.md and plots into `out`; return the markdown path."""
    out.mkdir(parents=True, exist_ok=True)
    settings = result["settings"]
    result["machine"] = machine_info(settings["threads"], settings["dtype"], settings.get("device", "cpu"))
    (out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "results.md").write_text(markdown(result) + "\n")
    result["plots"] = [p.name for p in plots(result, out)]
    return out / "results.md"
