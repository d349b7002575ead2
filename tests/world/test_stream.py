from unbag.world import stream
from unbag.world.scene import HELD_OUT


def _names_held_out(text: str) -> bool:
    for pairs in HELD_OUT.values():
        for value, shape in pairs:
            if value in text.split() and (shape in text or shape + "s" in text):
                return True
    return False


def test_training_stream_never_shows_or_names_a_held_out_combination():
    for k in range(1500):
        s = stream.sample(0, k, px=32)
        assert s.scene.held_out() == []
        assert all(not _names_held_out(seg["text"]) for seg in s.segments if seg["kind"] != "relation")


def test_stream_is_deterministic_by_index():
    a, b = stream.sample(4, 17), stream.sample(4, 17)
    assert a.caption == b.caption and (a.image == b.image).all()
    assert stream.batch(4, 2, 8)[3].caption == stream.sample(4, 19).caption


def test_stream_has_every_caption_form():
    kinds = {seg["kind"] for k in range(300) for seg in stream.sample(1, k, px=16).segments}
    assert kinds == {"object", "group", "relation"}
