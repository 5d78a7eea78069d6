"""Put a trained verify drafter (`drafter.py train`'s final.safetensors) into a checkpoint folder, stored in bf16.

    python ship.py runs/drafter/RUN/final.safetensors CKPT_DIR     # e.g. hamburger/default_model
"""

import sys

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.core.checkpoint import load_checkpoint, load_verify_drafter, write_verify_drafter


def main() -> None:
    trained, ckpt = sys.argv[1], sys.argv[2]
    model = load_checkpoint(ckpt)[0]
    print(write_verify_drafter(ckpt, load_verify_drafter(trained, model)))


if __name__ == "__main__":
    main()
