"""`POST /tokenize` and `POST /detokenize` (also under /v1): vLLM's token utilities, so that a client can count a
prompt's tokens against the context (benchmark harnesses and gateways ask for them) or build a prompt of exactly N
tokens.

A prompt is read as the completions and chat requests read it (`protocol._one_prompt`, `protocol.chat_prompt` with
the request's `tools` and its template's fields), so `count` is the `usage.prompt_tokens` those requests would report.
Nothing runs on the model.
"""

from __future__ import annotations

from hamburger.engine.sampling import DecodingConfig
from hamburger.serve.protocol import bad, chat_prompt, completion_prompts, parse_body, parse_chat_tools

# each reading's fields, and the values of those that choose how to read it: this server reads a prompt one way
FIELDS = {"prompt": {"model", "prompt", "add_special_tokens", "return_token_strs"},
          "messages": {"model", "messages", "tools", "tool_choice", "parallel_tool_calls", "add_special_tokens",
                       "add_generation_prompt", "continue_final_message", "chat_template_kwargs",
                       "return_token_strs"}}
ONE_READING = {"prompt": {"add_special_tokens": True}, "messages": {"add_special_tokens": False}}


def tokenize(raw: bytes, tokenizer, max_model_len: int) -> dict:
    """A /tokenize body (`prompt`: text or token ids; or chat `messages`, with `tools`) -> {"count", "max_model_len",
    "tokens"}, and "token_strs" (each token's text as the tokenizer writes it) with `return_token_strs`."""
    body = parse_body(raw)
    if ("prompt" in body) == ("messages" in body):
        raise bad("send either 'prompt' (text or token ids) or 'messages' (a chat)", "prompt")
    kind = "prompt" if "prompt" in body else "messages"
    for key, value in body.items():
        if key not in FIELDS[kind]:
            other = "messages" if kind == "prompt" else "prompt"
            raise bad(f"'{key}' goes with '{other}', not '{kind}'" if key in FIELDS[other] else
                      f"unrecognized request argument supplied: {key}", key, "unsupported_parameter")
        if value is not None and value != ONE_READING[kind].get(key, value):
            raise bad(f"'{key}' must be {str(ONE_READING[kind][key]).lower()} with '{kind}': this server reads "
                      "them one way, and the count is what its requests report", key, "invalid_value")
    strs = body.get("return_token_strs")
    if strs is not None and not isinstance(strs, bool):
        raise bad(f"'return_token_strs' must be a boolean, got {strs!r}", "return_token_strs")
    if kind == "prompt":
        if isinstance(body["prompt"], list) and body["prompt"] and not all(isinstance(t, int) for t in body["prompt"]):
            raise bad("'prompt' must be a string or a list of token ids (one prompt)", "prompt")
        tokens = completion_prompts(body, tokenizer)[0][0]
    else:
        tokens = chat_prompt(body, tokenizer, parse_chat_tools(body, DecodingConfig(), tokenizer))
    out = {"count": len(tokens), "max_model_len": max_model_len, "tokens": tokens}
    if strs:
        out["token_strs"] = tokenizer.convert_ids_to_tokens(tokens)
    return out


def detokenize(raw: bytes, tokenizer) -> dict:
    """A /detokenize body (`tokens`: token ids) -> {"prompt": their text}."""
    body = parse_body(raw)
    unknown = sorted(set(body) - {"model", "tokens"})
    if unknown:
        raise bad(f"unrecognized request argument supplied: {unknown[0]}", unknown[0], "unsupported_parameter")
    tokens, vocab = body.get("tokens"), len(tokenizer)
    if not isinstance(tokens, list) or not all(isinstance(t, int) and not isinstance(t, bool) and 0 <= t < vocab
                                               for t in tokens):
        raise bad(f"'tokens' must be a list of token ids (integers in [0, {vocab}))", "tokens")
    return {"prompt": tokenizer.decode(tokens)}
