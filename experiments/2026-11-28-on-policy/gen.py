"""On-policy reader data: the default model's own sampled verify_fold answers (the fold and its shipped fold reader,
T 0.7, top-p 0.9, 256 tokens) to the first N of session 44's 560 training prompts (runs/sampled-reader/prompts.jsonl),
written in `hamburger distill`'s row format (with its sidecar) so `hamburger segment` keeps the exact ids. Prompt i
draws with seed 44 + i. Resumes: chunks of 40 prompts are appended as they finish.

    python experiments/2026-11-28-on-policy/gen.py runs/sampled-reader/prompts.jsonl runs/on-policy/answers.jsonl 320
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHUNK = 40


def main() -> None:
    prompts_path, out, n = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    prompts = [json.loads(line) for line in Path(prompts_path).read_text().splitlines()][:n]
    out.parent.mkdir(parents=True, exist_ok=True)
    sidecar = json.loads(Path(prompts_path).with_name("sampled.jsonl.meta.json").read_text())  # the base's distill
    sidecar["settings"].update(decoder="hamburger generate --mode verify_fold (default model, default fold)",
                               seed="44 + prompt index")
    sidecar["prompts"] = prompts_path
    Path(f"{out}.meta.json").write_text(json.dumps(sidecar, indent=1))
    done = len(out.read_text().splitlines()) if out.exists() else 0
    for start in range(done - done % CHUNK, n, CHUNK):
        chunk = prompts[start:start + CHUNK]
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
            f.write("".join(json.dumps({"prompt": p["prompt"], "seed": 44 + start + k}) + "\n"
                            for k, p in enumerate(chunk)))
            f.flush()
            got = subprocess.run([".venv/bin/hamburger", "generate", "--prompts-file", f.name, "--mode", "verify_fold",
                                  "--temperature", "0.7", "--top-p", "0.9", "--max-new-tokens", "256", "--json",
                                  "--batch-size", "8", "--threads", "2"], check=True, capture_output=True, text=True)
        results = [json.loads(line) for line in got.stdout.splitlines() if line.startswith("{")]
        if len(results) != len(chunk):
            raise RuntimeError(f"{len(results)} results for {len(chunk)} prompts")
        with out.open("a") as f:
            for p, r in zip(chunk, results):
                ids, stop = r["token_ids"], None
                if r["finish_reason"] != "length":  # (generate's ids end with the EOS id; distill keeps it apart)
                    ids, stop = ids[:-1], ids[-1]
                f.write(json.dumps({"id": p["id"], "prompt": p["prompt"], "response": r["text"],
                                    "response_token_ids": ids, "finish_reason": r["finish_reason"],
                                    "stop_token_id": stop,
                                    "base_fingerprint": sidecar["base_fingerprint"], "source": p.get("source"),
                                    "tau": r["tau"], "kv_slots": r["kv_slots"],
                                    "kv_slots_ordinary": r["kv_slots_ordinary"]}) + "\n")
        print(f"{start + len(chunk)}/{n} answers", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
