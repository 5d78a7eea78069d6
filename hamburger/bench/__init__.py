"""Benchmarks: methods (HAMburger, verify, HF peers), prompts, timing, reports, machine facts."""
