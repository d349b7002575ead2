"""Every shipped model and head scores ctrl as when it was shipped (to float32 rounding).

The reference scores (tests/fixtures/shipped_scores.safetensors) were recorded when the weights were
reshipped with the 96 px built-in model (2026-12-06, `scripts/ship3d.py`: the object-trained model
resized to 96 px and continued with `clip-regions` on the pretraining pool at 96 px), on the 3D
ctrl (the default world), with
`python tests/models/test_shipped_scores.py RUN_DIR`: every score from the shipped files, a guard
against any change in loading, overlays or heads, and `builtin`'s global cosine from the dense fp32
model its last training run wrote (RUN_DIR), so the test also checks that packing it
(src/unbag/models/overlay.py) changed no score. The weights' SHA-1s, and whether the dense model
was used, are in the fixture's metadata. `--add SPEC ...` records newly shipped models (CE-CLIP,
FSC-CLIP and TripletCLIP were added so on 2026-12-07). `--only PROTOCOL` re-records one protocol's
scores and keeps the rest (TFRegions' follow SGI's learned proposer, whose regions that head scores).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "shipped_scores.safetensors"
PROTOCOLS = ("global", "head:builtin:tflocal", "head:builtin:tfglobal", "head:builtin:tfregions", "head:builtin:tflocal-li")
# each shipped model, with the protocols it is shipped for (heads exist for the first five only)
MODELS = {**{m: PROTOCOLS for m in ("builtin", "builtin:ft", "builtin:negclip", "builtin:clic", "builtin:degla")},
          **{m: ("global",) for m in ("builtin:ce-clip", "builtin:fsc-clip", "builtin:tripletclip")}}
PER_CATEGORY = 10  # recorded
CHECKED = 4  # checked: the first 4 of each category and split (a generated ctrl's first items are the same)


def shipped_scores(spec: str, protocols=PROTOCOLS, weights: str | None = None,
                   per_category: int = PER_CATEGORY) -> tuple[dict[str, torch.Tensor], str]:
    """({protocol: scores [items, images, captions]} on ctrl, the weights' SHA-1) of model `spec`,
    loaded from `weights` (a model folder) when given."""
    import unbag
    from unbag import protocols as registry
    from unbag.models.base import weights_id

    bench = unbag.load_benchmark("ctrl", per_category=per_category)
    model = unbag.load_model(weights or spec, device="cpu")
    job = unbag.JobCache()  # the heads share the model's frozen features, as in `unbag run` (scores unchanged)
    out = {}
    for proto in protocols:
        fn, _ = registry.build(registry.resolve(proto, spec), {}, "ctrl", cache=job)
        out[proto] = fn(model, bench, batch_size=256, progress=False)
    return out, weights_id(model)


@pytest.mark.parametrize("spec", MODELS)
@pytest.mark.slow
@pytest.mark.weights
def test_shipped_model_scores_ctrl_as_when_shipped(spec):
    from safetensors import safe_open

    with safe_open(str(FIXTURE), "pt") as f:
        want = {k: f.get_tensor(k) for k in f.keys() if k.startswith(spec + "|")}
    got, _ = shipped_scores(spec, MODELS[spec], per_category=CHECKED)
    assert len(want) == len(MODELS[spec])
    # the recorded rows of the checked items: blocks of PER_CATEGORY per split and category, in order
    rows = [block * PER_CATEGORY + k for block in range(10) for k in range(CHECKED)]
    for proto, s in got.items():
        ref = want[f"{spec}|{proto}"]
        assert ref.shape[0] == 10 * PER_CATEGORY
        ref = ref[rows]
        assert s.shape == ref.shape
        # equal up to float32 rounding: CPUs differ in their kernels' summation order (up to 34 ulps of
        # the largest score seen on a CPU other than the recording one); a changed weight moves
        # scores by orders of magnitude more
        tol = 128 * torch.finfo(torch.float32).eps * float(ref.abs().max())
        assert float((s - ref).abs().max()) <= tol, (spec, proto, (s - ref).abs().max().item(), tol)


if __name__ == "__main__":  # record the reference: only when reshipping, given the builtin's training run
    from safetensors.torch import save_file

    from unbag.utils import versions

    if len(sys.argv) == 3 and sys.argv[1] == "--only":  # re-record one protocol's scores, keep the rest
        from safetensors import safe_open

        with safe_open(str(FIXTURE), "pt") as f:
            tensors, meta = {k: f.get_tensor(k) for k in f.keys()}, f.metadata()
        for spec in [m for m, protocols in MODELS.items() if sys.argv[2] in protocols]:
            tensors[f"{spec}|{sys.argv[2]}"] = shipped_scores(spec, (sys.argv[2],))[0][sys.argv[2]].contiguous()
        save_file(tensors, str(FIXTURE), metadata=meta)
        sys.exit(print(f"re-recorded {sys.argv[2]} in {FIXTURE}", file=sys.stderr))
    if len(sys.argv) >= 3 and sys.argv[1] == "--add":  # record newly shipped models, keep the rest
        from safetensors import safe_open

        with safe_open(str(FIXTURE), "pt") as f:
            tensors, meta = {k: f.get_tensor(k) for k in f.keys()}, f.metadata()
        ids = json.loads(meta["weights_sha1"])
        for spec in sys.argv[2:]:
            scores, ids[spec] = shipped_scores(spec, MODELS[spec])
            tensors.update({f"{spec}|{p}": s.contiguous() for p, s in scores.items()})
        save_file(tensors, str(FIXTURE), metadata={**meta, "weights_sha1": json.dumps(ids)})
        sys.exit(print(f"added {', '.join(sys.argv[2:])} to {FIXTURE}", file=sys.stderr))
    if len(sys.argv) > 2 or sys.argv[1:2] in (["-h"], ["--help"]):
        sys.exit("usage: python tests/models/test_shipped_scores.py [RUN_DIR]  (the built-in model's training run, if kept)\n"
                 "       python tests/models/test_shipped_scores.py --only PROTOCOL  (re-record one protocol)\n"
                 "       python tests/models/test_shipped_scores.py --add SPEC ...  (record newly shipped models)")
    tensors, ids = {}, {}
    for spec, protocols in MODELS.items():
        scores, ids[spec] = shipped_scores(spec, protocols)
        tensors.update({f"{spec}|{p}": s.contiguous() for p, s in scores.items()})
    if len(sys.argv) == 2:
        dense, ids["builtin (dense)"] = shipped_scores("builtin", ("global",), f"{sys.argv[1]}/model")
        tensors["builtin|global"] = dense["global"].contiguous()
    save_file(tensors, str(FIXTURE), metadata={"weights_sha1": json.dumps(ids), "versions": json.dumps(versions()),
                                               "per_category": str(PER_CATEGORY), "dense": str(len(sys.argv) == 2)})
    print(f"wrote {FIXTURE}: {len(tensors)} score tensors", file=sys.stderr)
