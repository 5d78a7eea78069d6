"""The model: config, grafted modules, the HAMburger model, base loading, LoRA, checkpoints."""
