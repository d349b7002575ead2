"""An LLM-backed NegativeGenerator: a local transformers causal LM prompted as in DeGLA.

DeGLA (arXiv 2504.16801) asks Llama-3.1-8B, per negative type, for a caption with a
clearly different or opposite meaning, showing 5 in-context examples. This generator builds the
same kind of prompt for any local causal LM (`AutoModelForCausalLM`), keeps an answer only when it
passes `differs` (a real change of meaning-bearing words) and otherwise falls back to the rule
generator, counting how often it had to. Nothing is downloaded: pass a local folder, or a hub
id already in the local cache with HF_HUB_OFFLINE=1.
"""
from __future__ import annotations

import numpy as np

from ..errors import UnbagError
from .typed import TYPES, RuleGenerator, differs

INSTRUCTIONS = {
    "reorder": "Reorder the words or phrases of the caption so that its meaning changes clearly "
               "(for example, who does what to whom), keeping all of its words.",
    "swap_nouns": "Swap two nouns of the caption with each other so that its meaning changes clearly.",
    "swap_adjectives": "Swap two adjectives of the caption with each other so that its meaning changes clearly.",
    "replace_adjectives": "Replace an adjective of the caption with a different or opposite one, "
                          "so that the caption no longer describes the same image.",
    "replace_nouns": "Replace a noun of the caption with a different one, so that the caption no "
                     "longer describes the same image.",
}
EXAMPLES = {
    "reorder": [("a dog chasing a cat", "a cat chasing a dog"),
                ("a man riding a horse", "a horse riding a man"),
                ("a cup on top of a book", "a book on top of a cup"),
                ("a girl feeding a goat", "a goat feeding a girl"),
                ("a car behind a bus", "a bus behind a car")],
    "swap_nouns": [("a cat sleeping on a sofa", "a sofa sleeping on a cat"),
                   ("a plate of pizza next to a glass", "a glass of pizza next to a plate"),
                   ("a boy holding a kite in a park", "a kite holding a boy in a park"),
                   ("a laptop beside a phone on a desk", "a desk beside a phone on a laptop"),
                   ("a bird sitting on a fence", "a fence sitting on a bird")],
    "swap_adjectives": [("a red car and a blue truck", "a blue car and a red truck"),
                        ("a small dog next to a large cat", "a large dog next to a small cat"),
                        ("an old man with a young girl", "a young man with an old girl"),
                        ("a white plate on a wooden table", "a wooden plate on a white table"),
                        ("a tall tree beside a short fence", "a short tree beside a tall fence")],
    "replace_adjectives": [("a red apple on a table", "a green apple on a table"),
                           ("an empty glass of water", "a full glass of water"),
                           ("a wet dog on the beach", "a dry dog on the beach"),
                           ("a large bus on the road", "a small bus on the road"),
                           ("an open door of a house", "a closed door of a house")],
    "replace_nouns": [("a man riding a bicycle", "a man riding a horse"),
                      ("a cat on a bed", "a dog on a bed"),
                      ("a bowl of soup", "a bowl of rice"),
                      ("a woman holding an umbrella", "a woman holding a bag"),
                      ("a train at the station", "a bus at the station")],
}


def prompt(caption: str, kind: str) -> str:
    """The few-shot prompt for one caption and one negative type."""
    lines = ["You write hard negative captions: a caption with a clearly different meaning "
             "that differs from the original only slightly.", f"Task: {INSTRUCTIONS[kind]}", ""]
    for a, b in EXAMPLES[kind]:
        lines += [f"Caption: {a}", f"Negative: {b}", ""]
    return "\n".join(lines + [f"Caption: {caption}", "Negative:"])


def parse(generated: str) -> str:
    """The answer in a completion: its first non-empty line, unquoted."""
    for line in generated.splitlines():
        line = line.strip().strip('"').strip()
        if line:
            return line.split("Caption:")[0].strip()
    return ""


class LLMGenerator:
    """Typed negatives from a local causal LM, checked with `differs`, with rule fallback."""

    def __init__(self, model: str, device: str = "cpu", max_new_tokens: int = 40):
        try:
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError:
            raise UnbagError("the LLM generator needs transformers: pip install transformers") from None
        try:
            self.tok = AutoTokenizer.from_pretrained(model)
            self.lm = AutoModelForCausalLM.from_pretrained(model).to(device).eval()
        except OSError as e:
            raise UnbagError(f"cannot load the language model {model!r} ({e}); download it where a "
                             "network is available and pass its local folder") from None
        self.device, self.max_new_tokens = device, max_new_tokens
        self.fallback = RuleGenerator()
        self.stats = {"llm": 0, "rejected": 0}

    def complete(self, text: str) -> str:
        import torch

        ids = self.tok(text, return_tensors="pt").to(self.device)
        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else self.tok.eos_token_id
        with torch.no_grad():
            out = self.lm.generate(**ids, max_new_tokens=self.max_new_tokens, do_sample=False,
                                   pad_token_id=pad)
        return self.tok.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)

    def generate(self, caption: str, k: int, rng: np.random.Generator,
                 types: tuple[str, ...] = TYPES) -> list[tuple[str, str]]:
        out, seen = [], set()
        for kind in [str(t) for t in rng.permutation(list(types))]:
            if len(out) == k:
                break
            answer = parse(self.complete(prompt(caption, kind)))
            if answer and answer not in seen and differs(caption, answer):
                self.stats["llm"] += 1
                out.append((kind, answer))
                seen.add(answer)
            else:
                self.stats["rejected"] += 1
        if len(out) < k:  # rules fill what the LM could not give
            for kind, n in self.fallback.generate(caption, k, rng, types):
                if len(out) < k and n not in seen:
                    out.append((kind, n))
                    seen.add(n)
        return out
