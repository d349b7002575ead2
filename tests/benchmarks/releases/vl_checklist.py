"""The vl_checklist release, in miniature (official layout, planted ties)."""
from ._files import COLORS, img, write_json

SPECS = {"vl-checklist": "vl-checklist:{dir}", "vl-checklist-1k": "vl-checklist-1k:{dir}"}


def make(tmp_path_factory):
    """The project root with corpus/v1 yamls and data/ JSON: two colour sources (vg, vaw), a spatial
    relation file, one item whose negative equals its positive (a tie) and one missing image."""
    root = tmp_path_factory.mktemp("vlc")
    files = {("Attribute/color", "vg"): "data/Attribute/vg/color.json",
             ("Attribute/color", "vaw"): "data/Attribute/vaw/color.json",
             ("Relation/spatial", "vg"): "data/Relation/vg/spatial.json",
             ("Object/Size/large", "swig_agent"): "data/Object/Size/swig_size/swig_agent/swig_agent_large.json"}
    for k, ((kind, corpus), anno) in enumerate(files.items()):
        (root / "corpus" / "v1" / kind).mkdir(parents=True, exist_ok=True)
        (root / "corpus" / "v1" / kind / f"{corpus}.yaml").write_text(
            f'ANNO_PATH: "{anno}"\nIMG_ROOT: "{"swig/" if corpus.startswith("swig") else "vg"}"\nTYPE: "TUPLE_JSON"\n')
        recs = []
        for i in range(3):
            rel = f"VG_100K/{k}{i}.jpg" if not corpus.startswith("swig") else f"{k}{i}.jpg"
            if not (k == 2 and i == 2):  # one image missing: dropped and counted
                img(root / ("swig" if corpus.startswith("swig") else "vg") / rel, 640 + 3 * k + i)
            pos, neg = f"{COLORS[i]} knob", f"{COLORS[i + 1]} knob"
            recs.append([rel, {"POS": [pos, "extra"], "NEG": [pos if (k, i) == (0, 1) else neg]}])
        write_json(root / anno, recs)
    return root
