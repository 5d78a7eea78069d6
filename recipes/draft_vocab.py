"""Give a checkpoint a draft vocabulary: the SIZE most frequent response tokens of a training data file.

    python recipes/draft_vocab.py CHECKPOINT DATA_FILE [--size 4096]

Verify mode (both verify modes of `hamburger generate`, `serve`, `eval` and `bench`) then restricts the micro-step
decoder's drafts to those tokens: its LM head multiplies only their rows, a fraction of the full head's cost. The base
still checks every token over the whole vocabulary, so the output is unchanged; a draft outside the vocabulary is
only never proposed. Writes CHECKPOINT/draft_vocab.safetensors (checked against the base's vocabulary on loading).
The shipped default model's comes from the segmented training responses of `recipes/default-model.sh`:

    python recipes/draft_vocab.py hamburger/default_model data/segmented/smollm2-135m-instruct.train.jsonl
"""

import argparse

from hamburger.core.checkpoint import write_draft_vocab
from hamburger.engine.verify import draft_vocabulary

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("checkpoint", help="HAMburger checkpoint folder to write draft_vocab.safetensors into")
parser.add_argument("data", help="jsonl rows with response_ids (segmented or distilled data; gzip allowed)")
parser.add_argument("--size", type=int, default=4096, help="tokens in the draft vocabulary (default 4096)")
args = parser.parse_args()
ids = draft_vocabulary(args.data, args.size)
print(f"{write_draft_vocab(args.checkpoint, ids)}: {len(ids)} token ids")
