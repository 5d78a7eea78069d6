"""`GET /metrics`: what the server has done, in Prometheus' text exposition format (as vLLM's and TGI's servers expose
theirs), for a scraper or `curl`. Counters by decoding mode: answers by finish reason, prompt tokens and those taken
from the prompt cache, tokens written, base forwards (tokens per forward is their ratio), KV slots held at the end
against a one-token-per-forward model's; histograms of the time answers waited in the queue, took to their first
token, and took in all (the queue excluded); gauges of the rows running and waiting, and of each mode's prompt cache.
The scheduler's thread records each answer as it is given (`Scheduler._close`).
"""

from __future__ import annotations

import threading
from collections import defaultdict

from hamburger.engine.generate import GenerationResult

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)  # seconds
PREFIX = "hamburger_"
COUNTERS = {  # name -> (help, the result's number)
    "prompt_tokens_total": ("Prompt tokens of the answered requests", lambda r: r.prompt_tokens),
    "prompt_tokens_cached_total": ("Prompt tokens taken from the prompt cache, not read", lambda r: r.cached_tokens),
    "generation_tokens_total": ("Tokens written", lambda r: r.tokens),
    "base_forwards_total": ("Base-model forwards (tokens per forward: generation_tokens_total over this)",
                            lambda r: r.forwards),
    "kv_slots_total": ("KV-cache slots the answers held at their end", lambda r: r.kv_slots),
    "kv_slots_ordinary_total": ("KV-cache slots a one-token-per-forward model would have held",
                                lambda r: r.kv_slots_ordinary),
}
HISTOGRAMS = {
    "queue_seconds": "Time from a request's arrival to its row's start",
    "time_to_first_token_seconds": "Time from a row's start to its first group (the prompt's reading included)",
    "request_seconds": "Time from a row's start to its answer",
}


class Histogram:
    def __init__(self):
        self.counts, self.sum, self.count = [0] * len(BUCKETS), 0.0, 0

    def observe(self, value: float) -> None:
        self.sum, self.count = self.sum + value, self.count + 1
        for k, bound in enumerate(BUCKETS):
            if value <= bound:
                self.counts[k] += 1

    def lines(self, name: str, labels: str) -> list[str]:
        out = [f'{name}_bucket{{{labels},le="{bound:g}"}} {n}' for bound, n in zip(BUCKETS, self.counts)]
        return out + [f'{name}_bucket{{{labels},le="+Inf"}} {self.count}', f"{name}_sum{{{labels}}} {self.sum:.6f}",
                      f"{name}_count{{{labels}}} {self.count}"]


class Metrics:
    """The server's metrics: `observe` each answer (from any thread), `render` them all."""

    def __init__(self):
        self._lock = threading.Lock()
        self.answers: dict[tuple[str, str], int] = defaultdict(int)  # (mode, finish reason) -> answers
        self.counters: dict[tuple[str, str], float] = defaultdict(float)  # (name, mode) -> total
        self.histograms: dict[tuple[str, str], Histogram] = defaultdict(Histogram)  # (name, mode) -> histogram

    def observe(self, result: GenerationResult, mode: str, queue_s: float) -> None:
        """An answer given in ``mode`` after ``queue_s`` seconds of waiting for a row."""
        with self._lock:
            self.answers[mode, result.finish_reason] += 1
            for name, (_, value) in COUNTERS.items():
                self.counters[name, mode] += value(result)
            for name, seconds in (("queue_seconds", queue_s), ("time_to_first_token_seconds", result.prefill_s),
                                  ("request_seconds", result.prefill_s + result.decode_s)):
                self.histograms[name, mode].observe(seconds)

    def render(self, scheduler) -> str:
        """The exposition text: these metrics and ``scheduler``'s state (running and waiting rows, batches, cancelled
        requests, each mode's prompt cache)."""
        with self._lock:
            out = _family("requests_total", "counter", "Answers given, by mode and finish reason",
                          [(f'mode="{m}",finish_reason="{f}"', n) for (m, f), n in sorted(self.answers.items())])
            for name, (description, _) in COUNTERS.items():
                out += _family(name, "counter", description, [(f'mode="{m}"', v) for (n, m), v in
                                                              sorted(self.counters.items()) if n == name])
            for name, description in HISTOGRAMS.items():
                out += [f"# HELP {PREFIX}{name} {description}", f"# TYPE {PREFIX}{name} histogram"]
                for (n, mode), histogram in sorted(self.histograms.items()):
                    if n == name:
                        out += histogram.lines(PREFIX + name, f'mode="{mode}"')
        caches = sorted(list(scheduler.prompt_caches.items()))
        out += _family("requests_running", "gauge", "Rows of the running batch", [("", scheduler.running)])
        out += _family("requests_waiting", "gauge", "Requests waiting for a row", [("", scheduler.waiting)])
        out += _family("batches_total", "counter", "Batches run", [("", scheduler.batches)])
        out += _family("requests_cancelled_total", "counter", "Requests dropped because their client went away",
                       [("", scheduler.cancelled)])
        for name, key, kind, description in (("prompt_cache_bytes", "bytes", "gauge", "Bytes the prompt cache holds"),
                                             ("prompt_cache_prompts", "prompts", "gauge", "Prompts it holds"),
                                             ("prompt_cache_lookups_total", "lookups", "counter", "Prompts looked up"),
                                             ("prompt_cache_hits_total", "hits", "counter", "Lookups that found one")):
            out += _family(name, kind, description, [(f'mode="{m}"', c.stats()[key]) for m, c in caches])
        return "\n".join(out) + "\n"


def _family(name: str, kind: str, description: str, samples: list[tuple[str, float]]) -> list[str]:
    """One metric's lines: its help, its type and its samples (labels, value)."""
    return [f"# HELP {PREFIX}{name} {description}", f"# TYPE {PREFIX}{name} {kind}",
            *(f"{PREFIX}{name}{{{labels}}} {_number(value)}" if labels else f"{PREFIX}{name} {_number(value)}"
              for labels, value in samples)]


def _number(value: float) -> str:
    """A sample's value, whole numbers whole (`:g` would round a large count)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))
