"""How fast a language model writes with a draft and without, in the same run: llama.cpp's
prompt lookup (``LlamaPromptLookupDecoding``: the next tokens guessed from the prompt, where an
answer copies its input) and a smaller model of the same vocabulary as the draft
(``--draft-model``: it writes a few tokens greedily, the target checks them in one batch).

    nice -n 10 .venv/bin/python -m bench.draft TARGET.gguf [--draft-model SMALL.gguf]
        [--meeting tests/data/meetings/ES2006a.json] [--turns 40] [--tokens 160]

Two prompts from a real meeting: the keep's JSON archive of its first turns (constrained by
the archive's schema, temperature 0: the answer quotes the transcript) and a free answer to a
question about them. For each way of drafting: tokens written, seconds, tokens/s, and whether
the text is the one written without a draft (greedy decoding with a correct draft writes the
same text). Timings on a shared machine are not figures of record: say the load (``uptime``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from daemon.llm.generate import (
    REPEAT_PENALTY,
    ChatMessage,
    as_dicts,
    fast_grammar_llama,
    output_schema,
    with_schema_instruction,
)
from daemon.memory import archive
from daemon.memory.pieces import reading_lines


class ModelDraft:
    """A smaller model of the same vocabulary as the draft: ``tokens`` greedy tokens a call,
    its context reused from call to call (llama-cpp-python keeps the longest common prefix)."""

    def __init__(self, path: Path, threads: int, n_ctx: int, tokens: int = 4) -> None:
        from llama_cpp import Llama

        self.llm = Llama(str(path), n_ctx=n_ctx, n_threads=threads, verbose=False)
        self.eos = self.llm.token_eos()
        self.tokens = tokens

    def __call__(self, input_ids: Any, /, **kwargs: Any) -> Any:
        drafted: list[int] = []
        for token in self.llm.generate(list(map(int, input_ids)), top_k=1, temp=0.0,
                                       reset=True):
            drafted.append(int(token))
            if len(drafted) == self.tokens or token == self.eos:
                break
        return np.array(drafted, dtype=np.intc)


def prompts(meeting: Path, turns: int) -> list[tuple[str, list[ChatMessage], Any]]:
    """(name, messages, schema or None) of the two prompts."""
    said = json.loads(meeting.read_text())["turns"][:turns]
    lines = reading_lines([(t["speaker"], t["text"]) for t in said])
    fmt = archive.format_for("meeting")
    people = sorted({t["speaker"] for t in said})
    schema = output_schema(archive.output_type(fmt, stated=False))
    keep = with_schema_instruction(
        [ChatMessage(m["role"], m["content"]) for m in
         archive.prompt(fmt, "Meeting", "\n".join(lines), people, stated=False)], schema)
    ask = [ChatMessage("system", "Answer from the transcript, quoting who said what."),
           ChatMessage("user", "\n".join(lines) + "\n\nWhat did each person say about the "
                       "design of the product? Quote their words.")]
    return [("keep (JSON archive)", keep, schema), ("ask (free answer)", ask, None)]


def run(make: Callable[[], Any], messages: Sequence[ChatMessage], schema: Any,
        tokens: int) -> tuple[str, int, float]:
    llm = make()
    try:
        llm.create_chat_completion(as_dicts(messages), max_tokens=1, temperature=0)  # the prompt
        began = time.perf_counter()
        answer = llm.create_chat_completion(
            as_dicts(messages), max_tokens=tokens, temperature=0, repeat_penalty=REPEAT_PENALTY,
            **({"response_format": {"type": "json_object", "schema": schema}} if schema else {}))
        seconds = time.perf_counter() - began
    finally:
        llm.close()
    return (answer["choices"][0]["message"]["content"] or "",
            int(answer["usage"]["completion_tokens"]), seconds)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.draft")
    parser.add_argument("target", type=Path)
    parser.add_argument("--draft-model", type=Path)
    parser.add_argument("--meeting", type=Path, default=Path("tests/data/meetings/ES2006a.json"))
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--tokens", type=int, default=160)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    # llama-cpp-python keeps every position's logits when it drafts (n_ctx x 152k floats:
    # 1.9 GB at 3,072 tokens), and sizes that array for logits_all only when asked for it
    n_ctx = 3072

    def llama(draft: Any = None) -> Callable[[], Any]:
        return lambda: fast_grammar_llama(str(args.target), n_ctx=n_ctx, n_threads=args.threads,
                                          verbose=False, draft_model=draft,
                                          logits_all=draft is not None)

    ways: list[tuple[str, Callable[[], Any]]] = [
        ("no draft", llama()),
        ("prompt lookup, 10", llama(LlamaPromptLookupDecoding(num_pred_tokens=10))),
        ("prompt lookup, 2", llama(LlamaPromptLookupDecoding(num_pred_tokens=2))),
    ]
    if args.draft_model:
        ways.append(("draft model", llama(ModelDraft(args.draft_model, args.threads, n_ctx))))
    print(f"target {args.target.name}, {args.threads} threads, load {os.getloadavg()[0]:.1f}")
    for name, messages, schema in prompts(args.meeting, args.turns):
        plain = ""
        for way, make in ways:
            text, written, seconds = run(make, messages, schema, args.tokens)
            plain = plain or text
            print(f"{name:20} {way:18} {written:4d} tokens {seconds:6.1f} s "
                  f"{written / seconds:5.2f} tokens/s  same text: {text == plain}")
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
