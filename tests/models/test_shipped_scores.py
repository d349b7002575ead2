"""Every shipped model and head scores ctrl exactly as the dense checkpoints it was packed from.

The reference scores (tests/fixtures/shipped_scores.safetensors) were recorded from the dense
fp32 built-in model and the fp16 overlays of 2026-11-30, with `python tests/models/test_shipped_scores.py`,
before the shipped files were repacked (issue: a lean package); their weight SHA-1s are in its metadata.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "shipped_scores.safetensors"
MODELS = ("builtin", "builtin:ft", "builtin:negclip", "builtin:clic", "builtin:degla")
PROTOCOLS = ("global", "head:builtin:tflocal", "head:builtin:tfglobal", "head:builtin:tfregions")
PER_CATEGORY = 10


def shipped_scores(spec: str) -> tuple[dict[str, torch.Tensor], str]:
    """({protocol: scores [items, images, captions]} on ctrl, the model's weights SHA-1)."""
    import unbag
    from unbag import scoring
    from unbag.models.base import weights_id

    bench = unbag.load_benchmark("ctrl", per_category=PER_CATEGORY)
    model = unbag.load_model(spec, device="cpu")
    out = {}
    for proto in PROTOCOLS:
        fn, _ = scoring.build(scoring.resolve(proto, spec), {}, "ctrl")
        out[proto] = fn(model, bench, batch_size=256, progress=False)
    return out, weights_id(model)


@pytest.mark.parametrize("spec", MODELS)
def test_shipped_model_scores_ctrl_as_the_dense_checkpoint_did(spec):
    from safetensors import safe_open

    with safe_open(str(FIXTURE), "pt") as f:
        want = {k: f.get_tensor(k) for k in f.keys() if k.startswith(spec + "|")}
    got, _ = shipped_scores(spec)
    assert len(want) == len(PROTOCOLS)
    for proto, s in got.items():
        ref = want[f"{spec}|{proto}"]
        assert s.shape == ref.shape and s.shape[0] == 10 * PER_CATEGORY
        assert torch.equal(s, ref), (spec, proto, (s - ref).abs().max().item())


if __name__ == "__main__":  # record the reference (only ever from the checkpoints being replaced)
    from safetensors.torch import save_file

    from unbag.utils import versions

    tensors, ids = {}, {}
    for spec in MODELS:
        scores, ids[spec] = shipped_scores(spec)
        tensors.update({f"{spec}|{p}": s.contiguous() for p, s in scores.items()})
    save_file(tensors, str(FIXTURE), metadata={"weights_sha1": json.dumps(ids), "versions": json.dumps(versions()),
                                               "per_category": str(PER_CATEGORY)})
    print(f"wrote {FIXTURE}: {len(tensors)} score tensors", file=sys.stderr)
