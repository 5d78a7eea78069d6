"""Showing generated text with its token groups visible, and a one-line summary."""

from __future__ import annotations

from hamburger.engine.generate import GenerationResult

RESET = "\033[0m"
# Background shades for a group's confidence (mean p_continue inside it): low -> high.
SHADES = ["\033[48;5;52m", "\033[48;5;94m", "\033[48;5;22m", "\033[48;5;23m"]


def group_texts(tokenizer, result: GenerationResult, skip_special_tokens: bool = True) -> list[str]:
    """The text each group adds: the answer's text cut where each group's tokens end (found by decoding each
    prefix, so multi-token characters stay whole). The last group ends where the answer's text ends: the tokens it
    held past a stop string, or the stop id that ended the answer, show as they show in the answer."""
    text, texts, start, end = result.text, [], 0, 0
    for size in result.groups[:-1]:
        end += size
        cut = max(start, min(len(text), len(tokenizer.decode(result.token_ids[:end],
                                                                skip_special_tokens=skip_special_tokens))))
        texts.append(text[start:cut])
        start = cut
    return texts + [text[start:]] if result.groups else []


def shade(p_continue: list[float]) -> str:
    """A colour for a group from how sure the stop head was that it should go on."""
    level = sum(p_continue) / len(p_continue) if p_continue else 0.0
    return SHADES[min(len(SHADES) - 1, int(level * len(SHADES)))]


def stream_text(event, color: bool) -> str:
    """One streamed group: shaded on a terminal, plain otherwise."""
    if not color or not event.text:
        return event.text
    return shade(event.p_continue) + event.text + RESET


def render_groups(tokenizer, result: GenerationResult, color: bool, skip_special_tokens: bool = True) -> str:
    """The text with group boundaries: coloured backgrounds on a terminal, '|' separators otherwise."""
    texts = group_texts(tokenizer, result, skip_special_tokens)
    if not color:
        return "|".join(texts)
    out, start = [], 0
    for text, size in zip(texts, result.groups):
        out.append(shade(result.p_continue[start:start + size]) + text + RESET)
        start += size
    return "".join(out)


def summary_line(result: GenerationResult) -> str:
    saved = 1 - result.kv_slots / result.kv_slots_ordinary if result.kv_slots_ordinary else 0.0
    rereads = f" ({result.rereads} re-reads)" if result.rereads else ""
    cached = f" ({result.cached_tokens} prompt tokens cached)" if result.cached_tokens else ""
    predicted = (f" ({result.accepted_prediction_tokens} predicted tokens kept, {result.rejected_prediction_tokens} "
                 "refused)" if any(getattr(result, "predicted", ())) else "")
    return (f"[{result.tokens} tokens | {result.forwards} base forwards{rereads}{predicted} | tau {result.tau:.2f} | "
            f"KV slots {result.kv_slots} vs {result.kv_slots_ordinary} ordinary ({saved:.0%} saved) | "
            f"KV {result.kv_bytes / 2**20:.2f} MiB | TTFT {result.prefill_s * 1000:.0f} ms{cached} | "
            f"decode {result.decode_tok_s:.1f} tok/s | confidence {result.confidence:g} | {finished(result)}]")


def finished(result: GenerationResult) -> str:
    """Why the answer ended: its finish reason, with the stop string or stop token id that ended it."""
    if result.stop_reason is None:
        return result.finish_reason
    return f"{result.finish_reason} at {result.stop_reason!r}" if isinstance(result.stop_reason, str) else \
        f"{result.finish_reason} at token {result.stop_reason}"


def html_page(tokenizer, result: GenerationResult, prompt: str = "", skip_special_tokens: bool = True) -> str:
    """A standalone HTML page showing each group as a box, shaded by the stop head's confidence."""
    import html

    texts = group_texts(tokenizer, result, skip_special_tokens)
    spans, start = [], 0
    for i, (text, size) in enumerate(zip(texts, result.groups)):
        conf = result.p_continue[start:start + size]
        level = sum(conf) / len(conf) if conf else 0.0
        start += size
        tip = f"group {i + 1}: {size} token(s), mean 1-p_stop {level:.2f}"
        spans.append(f'<span class="g" style="background:hsl({int(120 * level)},70%,85%)" title="{tip}">'
                     f"{html.escape(text)}</span>")
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>hamburger generation</title>
<style>body{{font-family:system-ui,sans-serif;max-width:50em;margin:2em auto;line-height:1.7}}
.g{{border:1px solid #999;border-radius:3px;padding:0 1px;margin:0 1px;white-space:pre-wrap}}
.prompt{{color:#555;white-space:pre-wrap}} .summary{{font-family:monospace;color:#333;margin-top:1em}}</style>
</head><body>
<h3>Prompt</h3><div class="prompt">{html.escape(prompt)}</div>
<h3>Output (one box per token group; green = the stop head was confident the group should go on)</h3>
<div>{''.join(spans)}</div>
<div class="summary">{html.escape(summary_line(result))}</div>
</body></html>
"""
