"""The flat item store: what goes in comes out, views, shapes, distinct tables, duplicate ids."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from unbag.benchmarks.base import Benchmark
from unbag.benchmarks.common import unique_ids
from unbag.benchmarks.items import Item, Items
from unbag.errors import UnbagError


def _items() -> list[Item]:
    px = np.zeros((4, 4, 3), np.uint8)
    shared = {"subset": "a"}
    return [Item("x-1", ["/d/1.jpg", "/d/2.jpg"], ["a dog", "a cat"], shared, {"pair": "p"}, "f.json: item 1"),
            Item("x-2", ["/d/2.jpg"], ["a cat", "a dog", "a cow"], {"subset": "b"}, source=None),
            Item("y-007", [px, px], ["a dog", "a cow"], shared, {}, "f.json: item 3"),
            Item("plain", [b"\x89PNG", "/d/1.jpg"], ["a cat", "a dog"], {"subset": "b", "tag": "t"}, {"k": [1]}, "z")]


def test_every_field_comes_back_as_it_went_in():
    src = _items()
    got = Items(src)
    assert len(got) == 4 and list(got) == src and got == src
    assert got[-1] == src[-1] and got[2].images[0] is src[2].images[0]  # pixels by identity
    assert got[1].meta == {} and got[1].source is None and got[2].id == "y-007"
    with pytest.raises(IndexError):
        got[4]


def test_reading_an_item_gives_a_fresh_one_that_changes_nothing():
    got = Items(_items())
    it = got[0]
    it.captions[0] = "changed"
    it.images.append("/elsewhere.jpg")
    assert got[0].captions == ["a dog", "a cat"] and got[0].images == ["/d/1.jpg", "/d/2.jpg"]


def test_shared_values_are_held_once():
    got = Items(_items())
    s = got._store
    assert s.captions == ["a dog", "a cat", "a cow"] and [r for r in s.refs if isinstance(r, str)] == ["/d/1.jpg", "/d/2.jpg"]
    assert len(s.groups) == 3  # {'subset': 'a'} once, {'subset': 'b'} (two equal dicts) once, the tagged one
    assert s.ids.heads == ["x-", "y-", "plain"]  # ids held as a head and its trailing digits


def test_views_slices_and_take_read_the_same_items():
    src = _items()
    got = Items(src)
    assert list(got[1:3]) == src[1:3] and list(got.take([3, 0])) == [src[3], src[0]]
    assert list(got.take([3, 0]).take([1])) == [src[0]] and got[::-1][0] == src[3]
    with pytest.raises(TypeError):
        got[1:].append(src[0])


def test_shapes_in_order_of_first_appearance():
    got = Items(_items())
    shapes = got.shapes()
    assert list(shapes) == [(2, 2), (1, 3)]
    assert shapes[(2, 2)].tolist() == [0, 2, 3] and shapes[(1, 3)].tolist() == [1]


def test_distinct_tables_index_each_items_inputs():
    src = _items()
    view = Items(src).take([0, 3])
    refs, at, wheres = view.images()
    assert [[refs[j] for j in row] for row in at.tolist()] == [src[0].images, src[3].images]
    assert len(refs) == 3 and wheres[refs.index("/d/2.jpg")] == "f.json: item 1: field 'images[1]'"
    assert wheres[refs.index(b"\x89PNG")] == "z: field 'images[0]'"
    texts, at = view.captions()
    assert [[texts[j] for j in row] for row in at.tolist()] == [src[0].captions, src[3].captions]
    with pytest.raises(ValueError, match="several shapes"):
        Items(src).captions()


def test_first_use_names_where_each_distinct_input_is_first_read():
    got = dict(Items(_items()).first_use("captions"))
    assert got == {"a dog": "f.json: item 1: field 'captions[0]'", "a cat": "f.json: item 1: field 'captions[1]'",
                   "a cow": "x-2: field 'captions[2]'"}


def test_a_duplicate_id_is_found_with_both_places():
    src = _items() + [Item("x-2", ["/d/3.jpg"], ["c"], {"subset": "a"}, source="g.json: item 9")]
    assert Items(src).duplicate_id() == (4, 1)
    assert Items(_items()).duplicate_id() is None
    with pytest.raises(UnbagError, match=r"g.json: item 9: duplicate id 'x-2' \(also at x-2\)"):
        unique_ids(src, "bench")


def test_a_benchmark_stores_a_list_of_items_flat_and_scores_the_same():
    from unbag import models
    from unbag.scoring.cosine import score_global
    from unbag.scoring.encode import encode_images, encode_texts

    torch.manual_seed(0)
    tiny_backend = models.load("open_clip:unbag-tiny@random")

    rng = np.random.default_rng(0)
    pics = [rng.integers(0, 255, (32, 32, 3), np.uint8) for _ in range(3)]
    src = [Item(f"i{n}", [pics[n % 3], pics[(n + 1) % 3]], [f"cap {n % 4}", f"cap {(n + 2) % 5}"], {"subset": "s"})
           for n in range(7)]
    b = Benchmark("t", "t", src)
    assert isinstance(b.items, Items) and b.only("i3").items == [src[3]]
    got = score_global(tiny_backend, b)
    img = encode_images(tiny_backend, [r for it in src for r in it.images]).view(7, 2, -1)
    txt = encode_texts(tiny_backend, [c for it in src for c in it.captions]).view(7, 2, -1)
    assert torch.allclose(got, torch.einsum("nid,ncd->nic", img, txt), atol=1e-6)
