import numpy as np
import pytest

from unbag.errors import UnbagError
from unbag.negatives.llm import EXAMPLES, LLMGenerator, parse, prompt
from unbag.negatives.typed import TYPES, differs

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    """A randomly initialised 1-layer GPT-2 with a word-level tokenizer, built offline."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = set()
    for kind in TYPES:
        words |= set(prompt("a red dog chasing a blue cat", kind).replace("\n", " ").split())
    vocab = {w: i for i, w in enumerate(["[UNK]", "[EOS]", *sorted(words)])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="[EOS]",
                                                pad_token="[EOS]")
    cfg = transformers.GPT2Config(vocab_size=len(vocab), n_positions=512, n_embd=32, n_layer=1, n_head=2)
    d = tmp_path_factory.mktemp("lm")
    import torch
    with torch.random.fork_rng():  # the same random LM whatever ran before it in this process
        torch.manual_seed(0)
        transformers.GPT2LMHeadModel(cfg).save_pretrained(d)
    fast.save_pretrained(d)
    return str(d)


def test_prompt_has_the_instruction_and_five_examples():
    p = prompt("a red dog chasing a blue cat", "swap_adjectives")
    assert p.count("Caption:") == 6 and p.count("Negative:") == 6 and p.endswith("Negative:")
    assert all(f"Caption: {a}\nNegative: {b}" in p for a, b in EXAMPLES["swap_adjectives"])
    assert "adjectives" in p.splitlines()[1]


def test_parse_takes_the_first_answer_line():
    assert parse(' "a blue dog chasing a red cat"\nCaption: x') == "a blue dog chasing a red cat"
    assert parse("\n\n  a cat  Caption: more") == "a cat"
    assert parse("   ") == ""


def test_random_lm_answers_are_checked_and_rules_fill_in(tiny_lm):
    g = LLMGenerator(tiny_lm, max_new_tokens=8)
    caption = "a red dog chasing a blue cat"
    answers, real = [], g.complete
    g.complete = lambda text: answers.append(parse(real(text))) or answers[-1]
    got = g.generate(caption, 4, np.random.default_rng(0))
    assert len(got) == 4 and all(differs(caption, n) for _, n in got)
    # every LM answer is counted once, as kept or rejected (empty, repeated or no real change); the
    # kept ones lead the list, rules fill the rest
    assert g.stats["llm"] + g.stats["rejected"] == len(answers) >= 1
    kept = [a for i, a in enumerate(answers) if a and a not in answers[:i] and differs(caption, a)]
    assert [n for _, n in got[:g.stats["llm"]]] == kept[:g.stats["llm"]]


def test_a_good_lm_answer_is_kept(tiny_lm, monkeypatch):
    g = LLMGenerator(tiny_lm)
    answers = iter(["a blue dog chasing a red cat", "a red dog chasing a blue cat", "", "a red cat chasing a blue dog",
                    "a red dog chasing a blue bird"])
    monkeypatch.setattr(g, "complete", lambda text: next(answers))
    got = g.generate("a red dog chasing a blue cat", 3, np.random.default_rng(1))
    texts = [n for _, n in got]
    assert texts == ["a blue dog chasing a red cat", "a red cat chasing a blue dog", "a red dog chasing a blue bird"]
    assert g.stats == {"llm": 3, "rejected": 2}  # the unchanged caption and the empty answer


def test_missing_model_is_a_clear_error(tmp_path):
    with pytest.raises(UnbagError, match="cannot load the language model"):
        LLMGenerator(str(tmp_path / "nope"))


def test_export_records_how_many_lm_answers_it_kept(tiny_lm, tmp_path):
    import json

    from PIL import Image

    from unbag.negatives.export import export

    (tmp_path / "im").mkdir()
    Image.new("RGB", (32, 32), "red").save(tmp_path / "im" / "a.png")
    (tmp_path / "d.csv").write_text("filepath,title\nim/a.png,a red dog chasing a blue cat\n")
    out = export(f"csv:{tmp_path / 'd.csv'}", tmp_path / "neg.json", k=2, gen=f"llm:{tiny_lm}", progress=False)
    meta = json.loads((tmp_path / "neg.meta.json").read_text())
    entries = json.loads(out.read_text())
    assert meta["generator"] == f"llm:{tiny_lm}" and len(entries) == 1 and len(entries[0]["enhanced"]) == 2
    assert set(meta["llm_answers"]) == {"llm", "rejected"} and sum(meta["llm_answers"].values()) >= 1
