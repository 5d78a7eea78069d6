"""Decoding: sampling, the slot KV cache, batched HAMburger generation and lossless verify mode."""
