"""Serving: the OpenAI-compatible HTTP API, request parsing, the batching scheduler."""
