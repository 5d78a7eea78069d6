"""What the probe scripts of this folder share: their command line (MODEL OUT.json [--rows N] [--data VAL]) and the
model and val rows it names, on one thread."""

import argparse

import torch

from hamburger.core.checkpoint import load_checkpoint
from hamburger.train.batching import load_rows


def model_and_rows(doc: str, rows_default: int, extra=None):
    """-> (args, model, rows). ``extra``: a function that adds options to the parser."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("model", help="HAMburger checkpoint folder")
    parser.add_argument("out", help="JSON file to write")
    parser.add_argument("--rows", type=int, default=rows_default, help="first N rows of the val file")
    parser.add_argument("--data", default="runs/cpu/sliding09-split/val.jsonl")
    if extra:
        extra(parser)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model, tokenizer, _ = load_checkpoint(args.model)
    vocab = model.base.get_input_embeddings().num_embeddings
    rows, _ = load_rows(args.data, tokenizer, model.config.max_steps, vocab)
    return args, model, rows[:args.rows]
