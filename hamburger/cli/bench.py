"""`hamburger bench`: HAMburger against the base model and its peers, in one process and one run."""

from __future__ import annotations

import argparse

from hamburger.bench import run as library
from hamburger.bench.log import LOG_NAME
from hamburger.bench.methods import METHOD_NAMES
from hamburger.bench.prompts import CATEGORIES
from hamburger.cli.options import add_model, add_runtime, device_of, floats, ints, names


def cmd_bench(args: argparse.Namespace) -> int:
    from hamburger.bench.run import BenchSettings, bench

    device_of(args)
    settings = BenchSettings.quick() if args.quick else BenchSettings()
    for key in ("categories", "methods", "confidences", "lengths", "batch_sizes", "folds"):
        value = getattr(args, key)
        if value is not None:
            setattr(settings, key, value)
    for key in ("n_prompts", "max_new_tokens", "repeats", "threads", "dtype", "sweep_confidence", "device", "compile",
                "micro_loop"):
        if getattr(args, key) is not None:
            setattr(settings, key, getattr(args, key))
    if args.assistant and args.methods is None:
        settings.methods.append("assisted")
    out = bench(args.out, settings, args.model, args.prompts, args.restart, args.base, args.assistant, args.gguf)
    print(out.read_text() if out.suffix == ".md" else out)
    return 0


def register(sub) -> None:
    p = sub.add_parser("bench", help="benchmark HAMburger against the base model and its peers",
                       description=library.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model(p)
    p.add_argument("--out", default="runs/bench", help="folder for results.json, results.md and PNG plots")
    p.add_argument("--quick", action="store_true",
                   help="2 prompts per category, 32 new tokens, 1 repeat, small sweeps (a couple of minutes)")
    p.add_argument("--prompts", default=None, help="jsonl with 'prompt' (and optional 'category') instead of the "
                                                   "built-in categories")
    p.add_argument("--categories", type=names, default=None, help=f"comma list of {', '.join(CATEGORIES)}")
    p.add_argument("--methods", type=names, default=None, help=f"comma list of {', '.join(METHOD_NAMES)} (default: all "
                                                                  "but assisted and the llama_cpp ones)")
    p.add_argument("--assistant", default=None, metavar="MODEL",
                   help="a smaller causal LM (a bundled name, a Hugging Face folder or hub id) that drafts for HF's "
                        "assisted generation, timed as the method 'assisted' (added to the default methods; the base "
                        "checks its drafts by token id where the two share a vocabulary, else by text)")
    p.add_argument("--gguf", default=None, metavar="FILE",
                   help="the base as a GGUF file for the methods llama_cpp and llama_cpp_lookup (llama.cpp through "
                        "llama-cpp-python: bash benchmarks/install_llama_cpp.sh); default: a bundled base's own file")
    p.add_argument("--folds", type=names, default=None, metavar="SPEC,...",
                   help="the fold specs the verify_fold method times, one method each, named verify_fold@SPEC "
                        "(default the shipped fold; e.g. --methods hf_generate,verify_fold --folds "
                        "segments:60:0.45:first:steps=8:p=0.7,segments:60:0.45:none:bits=4; the syntax: "
                        "`hamburger generate --help`, --fold)")
    p.add_argument("--confidences", type=floats, default=None, help="HAMburger knob values (default 0.5,0.7,0.8,0.9)")
    p.add_argument("--n-prompts", type=int, default=None, help="prompts per category (default 20)")
    # Not the shared --max-new-tokens default: bench times fixed lengths, and --quick has its own (32).
    p.add_argument("--max-new-tokens", type=int, default=None,
                   help="new tokens per prompt (default 128; 32 with --quick)")
    p.add_argument("--repeats", type=int, default=None, help="runs per method and prompt; the median is kept (default 3)")
    p.add_argument("--lengths", type=ints, default=None, help="output-length sweep (default 64,...,1024; '' skips)")
    p.add_argument("--batch-sizes", type=ints, default=None, help="batch sweep (default 1,4,16; '' skips)")
    p.add_argument("--sweep-confidence", type=float, default=None,
                   help="HAMburger's knob in the length and batch sweeps (default: the model's default confidence)")
    p.add_argument("--compile", default=None, metavar="BACKEND", nargs="?", const="inductor",
                   help="GPU mode: HAMburger, our own loop and HF generate decode on static KV caches with their "
                        "per-step forward compiled by this torch.compile backend (default inductor; CUDA graphs on a "
                        "GPU), and the micro loop too with --micro-loop device; prompt lookup and early exit stay eager")
    p.add_argument("--micro-loop", default=None, choices=["host", "device"],
                   help="HAMburger's micro loop: host (a host decision per micro step, the default) or device (the "
                        "micro steps on the device, one host transfer per macro step)")
    p.add_argument("--restart", action="store_true",
                   help=f"discard the {LOG_NAME} of an earlier run in --out and measure from scratch (by default a "
                        "run with the same settings resumes where it stopped)")
    add_runtime(p, device_note="; every method runs there")
    p.set_defaults(func=cmd_bench)
