from PIL import ImageFont

from unbag.sgi.explain import _wrap


def test_panel_text_wraps_whole_words_and_keeps_every_word():
    font = ImageFont.load_default(size=12)
    caption = "an image showing a large purple metal cylinder to the left of a small orange rubber star"
    lines = _wrap(caption, font, 248)
    assert len(lines) > 1 and all(font.getlength(ln) <= 248 for ln in lines)
    assert " ".join(lines) == caption  # nothing cut off
    assert _wrap("", font, 248) == [""]
