"""Training data: prompts, distillation by the base model, entropy segmentation (and the shipped data files)."""
