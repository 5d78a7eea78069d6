"""What goes in and what ends a generation: prompt encoding, the end-of-sequence ids, stop strings."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

from hamburger.errors import HamburgerError


@dataclass(frozen=True)
class Templating:
    """How a chat template renders a conversation (the fields vLLM's chat requests take):
    ``add_generation_prompt`` opens the assistant's turn after the messages (the default); ``continue_final_message``
    leaves the last message, the assistant's, open instead, so the answer goes on from its text (a prefilled reply);
    ``kwargs``: more variables the template reads (e.g. Qwen3's ``enable_thinking``)."""

    add_generation_prompt: bool = True
    continue_final_message: bool = False
    kwargs: dict = field(default_factory=dict)

    def check(self, tokenizer, messages: list[dict]) -> None:
        """A clear error for options that cannot go together or with these ``messages``, or a kwarg that names one
        of the tokenizer's own `apply_chat_template` arguments (it would change how it runs, not what it renders)."""
        if self.add_generation_prompt and self.continue_final_message:
            raise HamburgerError("add_generation_prompt and continue_final_message cannot both be true: the reply "
                                 "either starts a new turn or goes on from the last message")
        if self.continue_final_message and (not messages or messages[-1].get("role") != "assistant"):
            raise HamburgerError("continue_final_message needs the last message to be the assistant's")
        taken = set(inspect.signature(tokenizer.apply_chat_template).parameters) - {"kwargs"} | {"messages"} \
            if self.kwargs else set()
        if taken & set(self.kwargs):
            raise HamburgerError(f"chat_template_kwargs may not set {sorted(taken & set(self.kwargs))}: they are "
                                 "the template call's own arguments")


def conversation_error(messages) -> str | None:
    """Why ``messages`` is not a conversation `encode_prompt` reads (a non-empty list of messages, each a role, system,
    user or assistant, and a text content), or None."""
    if not isinstance(messages, list) or not messages or not all(
            isinstance(m, dict) and m.get("role") in ("system", "user", "assistant")
            and isinstance(m.get("content"), str) for m in messages):
        return "a non-empty list of messages, each a role (system, user or assistant) and a text content"
    return None


def encode_prompt(tokenizer, prompt: str | list[dict], raw: bool = False, system: str | None = None,
                  tools: list[dict] | None = None, templating: Templating = Templating()) -> list[int]:
    """Token ids of a prompt: the chat template applied (unless raw) to a string or a list of messages (``tools``: the
    template's `tools`, the functions a model may call; ``templating``: how it renders them)."""
    if isinstance(prompt, str) and not prompt.strip():
        raise HamburgerError("the prompt is empty")
    if raw or getattr(tokenizer, "chat_template", None) is None:
        if not isinstance(prompt, str):
            raise HamburgerError("a list of messages needs a tokenizer with a chat template")
        return tokenizer(prompt, add_special_tokens=True)["input_ids"]
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
    if system:
        messages = [{"role": "system", "content": system}] + messages
    templating.check(tokenizer, messages)
    out = tokenizer.apply_chat_template(messages, add_generation_prompt=templating.add_generation_prompt,
                                        continue_final_message=templating.continue_final_message, tokenize=True,
                                        **({"tools": tools} if tools is not None else {}), **templating.kwargs)
    return list(out["input_ids"] if isinstance(out, dict) or hasattr(out, "keys") else out)


def chat_prompt_ids(tokenizer, prompt: str, system: str | None = None) -> list[int]:
    """Token ids of the chat-formatted prompt, exactly as `generate` encodes it (so training sees the
    prompts inference will see); an error for a tokenizer without a chat template."""
    if getattr(tokenizer, "chat_template", None) is None:
        raise HamburgerError("the base tokenizer has no chat template")
    return encode_prompt(tokenizer, prompt, system=system)


def eos_ids(model, tokenizer, required: bool = False) -> list[int]:
    """Every end-of-sequence id of a model (a HAMburger model's: its base's), without repeats, in the order
    found: its generation config, its config, then its tokenizer. With ``required``, none is an error."""
    from hamburger.core.model import HamburgerModel

    lm = model.base if isinstance(model, HamburgerModel) else model
    ids: list[int] = []
    for value in (getattr(getattr(lm, "generation_config", None), "eos_token_id", None),
                  getattr(lm.config, "eos_token_id", None), getattr(tokenizer, "eos_token_id", None)):
        for v in ([value] if isinstance(value, int) else list(value or [])):
            if int(v) not in ids:
                ids.append(int(v))
    if required and not ids:
        raise HamburgerError("the base model defines no end-of-sequence token")
    return ids


def cut_at_stop(text: str, stops: list[str], after: int = 0, keep: bool = False) -> tuple[str, str | None]:
    """(the text cut before the earliest occurrence of any stop string, or after it with ``keep``; the stop string
    found there, the first of ``stops`` where several begin at once, or None). ``after``: only an occurrence that ends
    past the text's first ``after`` characters counts (the caller checked them, or they are exempt: `min_tokens`)."""
    found = [(at, i) for i, stop in enumerate(stops) if (at := text.find(stop, max(0, after - len(stop) + 1))) >= 0]
    if not found:
        return text, None
    at, i = min(found)
    return text[:at + len(stops[i]) if keep else at], stops[i]


def safe_prefix(text: str, stops: list[str]) -> int:
    """Length of the text that can be shown: hold back a tail that may still grow into a stop
    string, and an incomplete multi-byte character."""
    cut = len(text)
    while cut > 0 and text[cut - 1] == "\ufffd":
        cut -= 1
    for stop in stops:
        for k in range(min(len(stop) - 1, cut), 0, -1):
            if text.endswith(stop[:k], 0, cut):
                cut -= k
                break
    return cut
