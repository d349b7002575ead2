"""CONTRIBUTING.md's worked example runs as written."""
import re
from pathlib import Path

import torch

CONTRIBUTING = Path(__file__).parents[1] / "CONTRIBUTING.md"


def test_the_worked_example_head_registers_trains_a_step_and_scores(tmp_path, monkeypatch):
    from unbag.heads import HeadConfig, heads
    from unbag.heads.common import head_inputs, image_fields, match_loss, text_fields
    from unbag.heads.train import build
    from unbag.utils import collect

    block = re.search(r"### Worked example: a head.*?```python\n(.*?)```", CONTRIBUTING.read_text(), re.S).group(1)
    try:
        # saved as a file of a package, the registry's collector finds its table
        (tmp_path / "plugin_heads").mkdir()
        (tmp_path / "plugin_heads" / "__init__.py").write_text("")
        (tmp_path / "plugin_heads" / "late.py").write_text(block)
        monkeypatch.syspath_prepend(str(tmp_path))
        found = collect("plugin_heads", "HEADS")
        assert list(found) == ["late"]
        heads().update(found)
        cfg = HeadConfig(kind="late", dim=8, patches=4, layers=0)
        head = build(cfg)
        assert image_fields(cfg) == ["img_global", "img_patches"] and text_fields(cfg) == ["phr_global", "phr_mask"]
        unit = lambda *s: torch.nn.functional.normalize(torch.randn(*s), dim=-1)  # noqa: E731
        fields = {"img_global": unit(6, 8), "img_patches": unit(6, 4, 8), "phr_global": unit(6, 3, 8),
                  "phr_mask": torch.tensor([[True, True, False]] * 6)}
        img, txt = head_inputs(fields, cfg)
        scores = head(**img, **txt)
        assert scores.shape == (6,)
        # the phrase's best patch cosine, by hand, for the first pair
        best = (fields["phr_global"][0, :2] @ fields["img_patches"][0].T).amax(-1).mean()
        assert torch.allclose(scores[0], 10 * best, atol=1e-5)
        loss = match_loss(scores.view(2, 3), torch.ones(2, 3, dtype=torch.bool))
        loss.backward()
        assert head.logit_scale.grad is not None
    finally:
        heads().pop("late", None)
