import numpy as np
import pytest

from unbag.negatives.pos import tag
from unbag.negatives.swap import EXCLUDED, concat, replace_word, swap_across, swap_within


def _rng(k=0):
    return np.random.default_rng(k)


def test_replace_word_is_whole_word_and_keeps_quotes():
    assert replace_word("a cat and a catalog", "cat", "dog") == "a dog and a catalog"
    assert replace_word('the "red" cube, red.', "red", "blue") == 'the "blue" cube, blue.'


def test_concat_gives_one_period_each():
    assert concat(["a b", "c d.", "e  "]) == "a b. c d. e."


def test_swap_within_swaps_two_words_of_one_class():
    text = "a small red cube left of a large blue sphere"
    for k in range(20):
        out = swap_within(text, _rng(k))
        assert out is not None and out != text
        assert sorted(out.split()) == sorted(text.split())  # a permutation of the words
        changed = [(a, b) for a, b in zip(text.split(), out.split()) if a != b]
        assert len(changed) == 2
        pos = dict(tag(text))
        assert pos[changed[0][0]] == pos[changed[1][0]] and pos[changed[0][0]] not in EXCLUDED


@pytest.mark.parametrize("text", ["hello", "the", "...", "a dog"])
def test_swap_within_gives_none_when_nothing_can_move(text):
    assert swap_within(text, _rng()) is None


def test_swap_within_repeated_words_swap_every_occurrence():
    # the adjectives or the nouns trade places, each at every one of its occurrences: never one
    # "red" left beside a "blue", and the commas stay
    seen = {swap_within("red cube, red cube and blue sphere", _rng(k)) for k in range(12)}
    assert seen == {"blue cube, blue cube and red sphere", "red sphere, red sphere and blue cube"}


def test_swap_across_moves_a_same_class_word_between_the_sentences():
    c1, c2 = "a red cube", "a green sphere"
    seen = set()
    for k in range(30):
        out = swap_across(c1, c2, _rng(k))
        parts = [p.strip() for p in out.split(".") if p.strip()]
        assert len(parts) == 2 and out.endswith(".")
        seen.add(frozenset(parts))
    # either the adjectives or the nouns are exchanged, never a shared word ("a")
    assert seen <= {frozenset({"a green cube", "a red sphere"}), frozenset({"a red sphere", "a green cube"})}


def test_swap_across_skips_words_both_sentences_share():
    out = swap_across("a red cube", "a red sphere", _rng(1))
    # only the nouns can move; with one differing word that equals swapping the sentences (a
    # degenerate case of CLIC's rule, kept as the released code has it)
    assert set(out.rstrip(".").split(". ")) == {"a red sphere", "a red cube"}


def test_swap_across_falls_back_to_any_tokens():
    out = swap_across("hello", "wow", _rng(0))  # INTJ only: no common usable class
    assert set(out.rstrip(".").split(". ")) == {"wow", "hello"}


@pytest.mark.parametrize("seed", range(6))
def test_swap_across_fallback_swaps_words_not_punctuation(seed):
    # identical captions share every class's words: the fallback swaps two different words
    out = swap_across("A dog runs.", "A dog runs.", _rng(seed))
    sentences = out.rstrip(".").split(". ")
    assert len(sentences) == 2
    for sent in sentences:
        words = sent.split()
        assert len(words) == 3 and set(words) <= {"A", "dog", "runs"}
    assert sorted(sentences) != ["A dog runs", "A dog runs"]
    # repeated words move every occurrence; commas stay where they were
    c1 = "the dog, the dog and a cat."
    out = swap_across(c1, "a man walks.", _rng(seed))
    assert out.count(",") == 1 and ".." not in out and all(w.strip(",.") for w in out.split())
    mine = next(x for x in out.rstrip(".").split(". ") if "," in x).split()  # c1 with the swap made
    orig = c1.rstrip(".").split()
    assert len(mine) == len(orig) and [w.endswith(",") for w in mine] == [w.endswith(",") for w in orig]
    moved = {orig[i].strip(",") for i in range(len(orig)) if mine[i] != orig[i]}
    assert len(moved) == 1, (out, moved)  # one word of c1 was swapped ...
    word = moved.pop()
    assert all(mine[i] != orig[i] for i in range(len(orig)) if orig[i].strip(",") == word), out  # ... everywhere


def test_swap_across_gives_none_with_nothing_to_swap():
    assert swap_across("dog.", "dog.", _rng(0)) is None


def test_clic_negative_is_never_a_positive():
    from unbag.training.data import Record, clic_texts

    pos, neg = clic_texts(Record(None, ["dog."]), Record(None, ["dog."]), _rng(0))
    assert neg not in pos
