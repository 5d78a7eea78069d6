"""Files of rows: JSONL (plain or gzipped) read and written, sidecar meta files, sharding, prompt files.

Data jobs (distill, segment) append rows and fsync them, so a killed job leaves at most one truncated last
line (no newline, not valid JSON); readers of such a file ignore it (``tail="ignore"``) and a resuming job cuts
it off (``tail="cut"``). How a file was made lives in its sidecar ``FILE.meta.json``; a resume with other
settings is refused. Under a launcher that sets RANK and WORLD_SIZE each process writes its own shard.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any, Literal

from hamburger.errors import HamburgerError

Tail = Literal["error", "ignore", "cut"]


def _read_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def read_jsonl(path: str | os.PathLike, tail: Tail = "error", missing_ok: bool = False) -> list[Any]:
    """The rows (JSON values) of a jsonl file, ``.gz`` decompressed; blank lines are skipped.

    A line that is not valid JSON is an error naming ``file:line``, except a truncated last line (no newline):
    with ``tail`` "ignore" it is left out (a note on stderr), with "cut" it is also cut off the file. A missing
    file is an error, or no rows with ``missing_ok``.
    """
    path = Path(path)
    try:
        data = _read_bytes(path)
    except FileNotFoundError as e:
        if missing_ok:
            return []
        raise HamburgerError(f"cannot read {path}: {e.strerror}") from None
    except (OSError, EOFError) as e:
        raise HamburgerError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from None
    rows, start, number = [], 0, 0
    while start < len(data):
        end = data.find(b"\n", start)
        line = data[start:] if end < 0 else data[start:end]
        number += 1
        try:
            if line.strip():
                rows.append(json.loads(line))
        except ValueError as e:  # JSONDecodeError, or bytes that are not UTF-8
            if end >= 0 or tail == "error":
                raise HamburgerError(f"{path}:{number}: not valid JSON ({getattr(e, 'msg', e)})") from None
            print(f"hamburger: {path}: ignoring a truncated last line", file=sys.stderr)
            if tail == "cut":
                with open(path, "r+b") as f:
                    f.truncate(start)
            break
        start = len(data) if end < 0 else end + 1
    return rows


def line_of(path: str | os.PathLike, n: int) -> int:
    """The file line of the n-th row `read_jsonl` returns (blank lines are not rows), for error messages."""
    rows = 0
    for number, line in enumerate(_read_bytes(Path(path)).split(b"\n"), 1):
        rows += bool(line.strip())
        if rows == n:
            return number
    return n


def append_jsonl(path: Path, rows: list[dict]) -> None:
    """Append rows and make them durable (flush + fsync) before returning."""
    if not rows:
        return
    if path.exists() and path.stat().st_size and not path.read_bytes()[-1:] == b"\n":
        with open(path, "ab") as f:  # never glue a row onto a half line
            f.write(b"\n")
    with open(path, "a", encoding="utf-8") as f:
        f.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        f.flush()
        os.fsync(f.fileno())


def write_jsonl(rows: list[dict], path: str | os.PathLike) -> None:
    """Write rows to a jsonl file atomically (a temporary file renamed into place)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".partial")
    with open(tmp, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    tmp.replace(path)


def read_prompt_file(path: str | os.PathLike, conversations: bool = False) -> list[dict]:
    """The rows of a prompt file: jsonl, each row an object with a non-empty string field ``prompt`` (other fields
    kept); with ``conversations``, or a field ``messages`` instead, a conversation (`prompt.conversation_error`)."""
    from hamburger.engine.prompt import conversation_error

    rows = read_jsonl(path)
    for n, row in enumerate(rows, 1):
        if conversations and isinstance(row, dict) and "messages" in row and "prompt" not in row:
            if why := conversation_error(row["messages"]):
                raise HamburgerError(f"{path}:{line_of(path, n)}: 'messages': {why}")
            continue
        if not isinstance(row, dict) or not isinstance(row.get("prompt"), str):
            raise HamburgerError(f"{path}:{line_of(path, n)}: each line needs a string field 'prompt'"
                                 + (" or a list 'messages'" if conversations else ""))
        if not row["prompt"].strip():
            raise HamburgerError(f"{path}:{line_of(path, n)}: the prompt is empty")
    if not rows:
        raise HamburgerError(f"{path}: no prompts")
    return rows


# ---------------------------------------------------------------- sidecars, ids, shards
def file_sha256(path: str | os.PathLike) -> str:
    """The hex SHA-256 of a file's bytes (read in chunks: a checkpoint's weights need not fit twice in memory)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def meta_path(path: str | os.PathLike) -> Path:
    """The sidecar of a data file: ``FILE.meta.json``."""
    return Path(f"{path}.meta.json")


def read_sidecar(path: str | os.PathLike) -> dict:
    """The sidecar meta of a data file; {} when it has none."""
    mp = meta_path(path)
    return json.loads(mp.read_text()) if mp.is_file() else {}


def check_meta(path: Path, meta: dict, compare: tuple[str, ...], has_rows: bool) -> None:
    """Write `meta` beside `path`, or refuse when an existing sidecar differs in any `compare` key."""
    mp = meta_path(path)
    if mp.exists():
        old = read_sidecar(path)
        diff = [k for k in compare if old.get(k) != meta.get(k)]
        if diff and has_rows:
            raise HamburgerError(f"{path} was made with other settings ({', '.join(diff)}: "
                                 f"{[old.get(k) for k in diff]} != {[meta.get(k) for k in diff]}); "
                                 "use another --out or the same settings")
    elif has_rows:
        raise HamburgerError(f"{path} has rows but no {mp.name}; cannot check how it was made")
    tmp = mp.with_name(mp.name + ".partial")
    tmp.write_text(json.dumps(meta, indent=1, ensure_ascii=False))
    tmp.replace(mp)


def row_ids(rows: list[dict], id_field: str, stem: str) -> list[str]:
    """The id of every row (``{stem}:{line}`` where a row has no `id_field`); duplicates are an error."""
    ids = [str(r[id_field]) if id_field in r else f"{stem}:{i}" for i, r in enumerate(rows)]
    if len(set(ids)) != len(ids):
        raise HamburgerError(f"field {id_field!r} has duplicate values; ids must be unique to resume")
    return ids


def shard_info() -> tuple[int, int]:
    """(rank, world size) from the RANK / WORLD_SIZE environment variables; (0, 1) when unset."""
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    if world < 1 or not 0 <= rank < world:
        raise HamburgerError(f"bad RANK={rank} / WORLD_SIZE={world}")
    return rank, world


def shard_path(out: str | os.PathLike, rank: int, world: int) -> Path:
    """Where process ``rank`` of ``world`` writes: ``OUT.rank{r}`` (``OUT`` itself for one process)."""
    return Path(f"{out}.rank{rank}") if world > 1 else Path(out)
