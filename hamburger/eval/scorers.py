"""Task scorers: final-number exact match, ROUGE-L, chrF, and sandboxed HumanEval execution."""

from __future__ import annotations

import re
from collections import Counter

from hamburger.eval.sandbox import Limits, run_python

NUMBER = re.compile(r"-?\$?\s?\d[\d,]*(?:\.\d+)?|-?\.\d+")


def normalise_number(text: str) -> str | None:
    """'$1,234.50' -> '1234.5'; '-3' -> '-3'; '7.0' -> '7'. None if not a number."""
    t = text.replace("$", "").replace(",", "").replace(" ", "").rstrip(".")
    try:
        value = float(t)
    except ValueError:
        return None
    if value.is_integer():
        return str(int(value))
    return f"{value:.6f}".rstrip("0").rstrip(".")


def extract_final_number(text: str) -> str | None:
    """The answer number of a solution: after '####' if present, else after 'answer is', else the last number."""
    for marker in ("####", "answer is", "answer:", "Answer:"):
        if marker in text:
            tail = text.rsplit(marker, 1)[1]
            found = NUMBER.findall(tail)
            if found:
                return normalise_number(found[0])
    found = NUMBER.findall(text)
    return normalise_number(found[-1]) if found else None


def gsm8k_reference(answer: str) -> str | None:
    """The gold number of a GSM8K answer field (the text after '####')."""
    if "####" not in answer:
        return None
    return normalise_number(answer.rsplit("####", 1)[1].strip())


def _lcs(a: list[str], b: list[str]) -> int:
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F1 over whitespace tokens."""
    c, r = candidate.split(), reference.split()
    if not c or not r:
        return float(c == r)
    lcs = _lcs(c, r)
    if lcs == 0:
        return 0.0
    p, rec = lcs / len(c), lcs / len(r)
    return 2 * p * rec / (p + rec)


def chrf(candidate: str, reference: str, n: int = 6, beta: float = 2.0) -> float:
    """chrF (character n-grams 1..n, whitespace removed, F-beta), in [0, 1]."""
    c, r = "".join(candidate.split()), "".join(reference.split())
    if not c or not r:
        return float(c == r)
    precisions, recalls = [], []
    for k in range(1, n + 1):
        cg = Counter(c[i:i + k] for i in range(len(c) - k + 1))
        rg = Counter(r[i:i + k] for i in range(len(r) - k + 1))
        if not cg or not rg:
            continue
        overlap = sum((cg & rg).values())
        precisions.append(overlap / sum(cg.values()))
        recalls.append(overlap / sum(rg.values()))
    if not precisions:
        return 0.0
    p, rec = sum(precisions) / len(precisions), sum(recalls) / len(recalls)
    return 0.0 if p + rec == 0 else (1 + beta**2) * p * rec / (beta**2 * p + rec)


# ----------------------------------------------------------------------------------- HumanEval
CODE_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)(?:```|$)", re.S)


def humaneval_program(problem: dict, completion: str) -> str:
    """The full program for a completion: a fenced code block defining the entry point is used as
    the whole solution (after the prompt's imports); anything else continues the prompt's body."""
    blocks = CODE_BLOCK.findall(completion)
    code = blocks[0] if blocks else completion
    entry = problem["entry_point"]
    if re.search(rf"^\s*def\s+{re.escape(entry)}\s*\(", code, re.M):
        header = "\n".join(line for line in problem["prompt"].splitlines() if line.startswith(("import ", "from ")))
        body = header + "\n\n" + code
    else:
        body = problem["prompt"] + code
    return body + "\n\n" + problem["test"] + f"\n\ncheck({entry})\n"


def run_sandboxed(program: str, timeout: float = 10.0) -> tuple[bool, str]:
    """Run a program in the bubblewrap sandbox (see `hamburger.eval.sandbox`); (passed, reason).

    Raises HamburgerError, and runs nothing, when no isolation is available."""
    result = run_python(program, Limits(timeout=timeout))
    if result.timed_out:
        return False, "timeout"
    if result.returncode == 0:
        return True, "passed"
    last = (result.stderr.strip().splitlines() or [f"exit {result.returncode}"])[-1]
    return False, last[:200]
