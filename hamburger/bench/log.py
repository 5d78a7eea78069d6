"""The resumable record of a benchmark run: one JSON line per measured prompt, fsynced as it lands.

A full `hamburger bench` run takes hours on a small CPU. Its log (``bench_log.jsonl`` in ``--out``)
starts with a header (settings, model fingerprint, prompt list); a later run with the same header
skips what is already measured, so a killed run loses at most the prompt in flight. Every start
appends a ``session`` line with the machine facts, so a run that spans several sessions says so.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from hamburger.data.io import read_jsonl
from hamburger.errors import HamburgerError

LOG_NAME = "bench_log.jsonl"


def prompts_digest(prompts: list[dict]) -> str:
    text = json.dumps([[p.get("category"), p["prompt"]] for p in prompts], ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _flat(header: dict) -> dict:
    """{"settings": {"repeats": 3}} -> {"settings.repeats": 3}, to name what differs."""
    out = {}
    for key, value in header.items():
        if isinstance(value, dict):
            out.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            out[key] = value
    return out


class BenchLog:
    def __init__(self, out: Path, header: dict, restart: bool = False):
        self.path = Path(out) / LOG_NAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.prompts: dict[int, list[dict]] = {}
        self.sweeps: dict[str, list[dict]] = {}
        self.sessions: list[dict] = []
        if restart and self.path.exists():
            self.path.unlink()
        if self.path.exists():
            self._load(header)
        else:
            self._append({"header": header})

    def _load(self, header: dict) -> None:
        lines = read_jsonl(self.path)
        if not lines or "header" not in lines[0]:
            raise HamburgerError(f"{self.path} is not a benchmark log; delete it or pass --restart")
        old, new = _flat(lines[0]["header"]), _flat(json.loads(json.dumps(header)))
        if old != new:
            diff = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            raise HamburgerError(f"{self.path} holds a run with other settings ({', '.join(diff)} differ); "
                                 "use another --out or pass --restart to discard it")
        for line in lines[1:]:
            if "prompt_index" in line:
                self.prompts[line["prompt_index"]] = line["rows"]
            elif "sweep" in line:
                self.sweeps[line["sweep"]] = line["rows"]
            elif "session" in line:
                self.sessions.append(line["session"])

    def _append(self, record: dict) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def start_session(self, machine: dict) -> None:
        session = {**machine, "prompts_already_measured": len(self.prompts)}
        self.sessions.append(session)
        self._append({"session": session})

    def add_prompt(self, index: int, rows: list[dict]) -> None:
        self.prompts[index] = rows
        self._append({"prompt_index": index, "rows": rows})

    def add_sweep(self, name: str, rows: list[dict]) -> None:
        self.sweeps[name] = rows
        self._append({"sweep": name, "rows": rows})
