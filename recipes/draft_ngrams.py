"""Give a checkpoint an n-gram draft table: the base's own confident continuations, counted over its answers.

    python recipes/draft_ngrams.py CHECKPOINT DATA_FILE [--orders 3,2] [--min-count 3] [--min-share 0.6]

Both verify modes (`hamburger generate`, `serve`, `eval`, `bench`) then draft, where prompt lookup finds no match,
the tokens that most often followed the text's last ``order`` tokens in those answers (`engine/ngrams.py`). The base
checks every draft, so the output is unchanged; a wrong draft costs a little time. Writes
CHECKPOINT/draft_ngrams.safetensors (checked against the base's vocabulary on loading). The shipped default model's
comes from the base's greedy answers to the train split's prompts (`hamburger distill`, as `recipes/default-model.sh`
makes them):

    python recipes/draft_ngrams.py hamburger/default_model data/distilled/smollm2-135m-instruct.train.jsonl.gz
"""

import argparse

from hamburger.core.checkpoint import load_checkpoint, write_draft_ngrams
from hamburger.data.io import read_jsonl
from hamburger.engine.ngrams import NGRAM_TOKENS, NgramDrafts

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("checkpoint", help="HAMburger checkpoint folder to write draft_ngrams.safetensors into")
parser.add_argument("data", help="jsonl rows with response_token_ids or response_ids (distilled or segmented data; "
                                 "gzip allowed): answers the base wrote")
parser.add_argument("--orders", default="3,2", help="context lengths, longest tried first (default 3,2)")
parser.add_argument("--min-count", type=int, default=3, help="least times a context was seen (default 3)")
parser.add_argument("--min-share", type=float, default=0.6,
                    help="least share of a context's occurrences its continuation must have (default 0.6)")
parser.add_argument("--tokens", type=int, default=NGRAM_TOKENS,
                    help=f"most tokens one proposal drafts (default {NGRAM_TOKENS})")
args = parser.parse_args()
model = load_checkpoint(args.checkpoint)[0]
vocab = model.base.get_output_embeddings().weight.shape[0]
answers = (row["response_token_ids"] if "response_token_ids" in row else row["response_ids"]
           for row in read_jsonl(args.data))
table = NgramDrafts.count(answers, vocab, tuple(int(n) for n in args.orders.split(",")), args.min_count,
                          args.min_share, args.tokens)
print(f"{write_draft_ngrams(args.checkpoint, table)}: {len(table)} contexts")
