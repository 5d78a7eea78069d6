"""recipes/append_gz.sh, which packs what a CPU job between GPU windows wrote (sampled draws, the base's entropies)
into the committed gzip file: run as the jobs run it."""

import gzip
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "recipes" / "append_gz.sh"


def pack(path: Path) -> str:
    done = subprocess.run(["bash", str(SCRIPT), str(path)], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_it_appends_the_whole_new_lines_and_keeps_the_earlier_bytes(tmp_path):
    rows = tmp_path / "rows.jsonl"
    packed = tmp_path / "rows.jsonl.gz"
    rows.write_text('{"id": 1}\n{"id": 2}\n')
    assert pack(rows).endswith(": 0 -> 2 rows")
    first = packed.read_bytes()
    with rows.open("a") as f:  # a job goes on: two whole lines and the half of a third
        f.write('{"id": 3}\n{"id": 4}\n{"id"')
    assert pack(rows).endswith(": 2 -> 4 rows")
    assert packed.read_bytes().startswith(first)  # (a new gzip member after the committed bytes)
    assert gzip.decompress(packed.read_bytes()).decode() == '{"id": 1}\n{"id": 2}\n{"id": 3}\n{"id": 4}\n'
    again = packed.read_bytes()
    assert pack(rows).endswith(": 4 -> 4 rows")  # nothing new: nothing appended
    assert packed.read_bytes() == again


def test_a_job_not_begun_packs_nothing(tmp_path):
    assert pack(tmp_path / "none.jsonl").endswith("not begun")
    assert not (tmp_path / "none.jsonl.gz").exists()
