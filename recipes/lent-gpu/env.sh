export PYTHONPATH=/tmp/site:$PWD HAMBURGER_CACHE=/tmp/hc PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export HB="python3 $PWD/.gpu/hb.py" WORK=/tmp/work DISTILLED=/tmp/work/distilled.jsonl DEVICE=cuda DISTILL_SECONDS=300
