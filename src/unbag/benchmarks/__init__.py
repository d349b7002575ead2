"""Benchmark registry: `NAME` or `NAME:DIR` -> Benchmark."""
from __future__ import annotations

from ..errors import UnbagError
from .base import Benchmark, Item, image_key, load_image

BENCHMARKS = ("ctrl", "ctrl-retrieval", "sugarcrepe", "sugarcrepe++", "aro-vgr", "aro-vga", "aro-coco-order",
              "aro-flickr-order", "valse", "winoground", "bivlc", "imagefolder", "karpathy")


def load(spec: str, seed: int = 0):
    """Load a benchmark named by a spec: `ctrl` (generated in memory), `ctrl:DIR`, or the
    retrieval set `ctrl-retrieval[:N]`."""
    name, _, path = spec.partition(":")
    image_root = None
    if name in ("sugarcrepe", "sugarcrepe++", "valse"):  # NAME:DIR[:IMAGE_ROOT]
        path, _, image_root = path.partition(":")
    if name in BENCHMARKS[2:] and not path:
        raise UnbagError(f"benchmark {name} reads a local copy of its official release: use {name}:DIR "
                         "(layouts in docs/benchmarks.md)")
    if name == "sugarcrepe":
        from .sugarcrepe import load_sugarcrepe
        return load_sugarcrepe(path, image_root)
    if name == "sugarcrepe++":
        from .sugarcrepe import load_sugarcrepe_pp
        return load_sugarcrepe_pp(path, image_root)
    if name.startswith("aro-"):
        from . import aro
        fn = {"aro-vgr": aro.load_vgr, "aro-vga": aro.load_vga, "aro-coco-order": aro.load_coco_order,
              "aro-flickr-order": aro.load_flickr_order}[name]
        return fn(path) if name in ("aro-vgr", "aro-vga") else fn(path, seed=seed)
    if name == "valse":
        from .valse import load as load_valse
        return load_valse(path, image_root)
    if name in ("winoground", "bivlc"):
        import importlib
        return importlib.import_module(f".{name}", __name__).load(path)
    if name == "imagefolder":
        from .classification import load as load_folder
        return load_folder(path)
    if name == "karpathy":
        from .retrieval import karpathy
        return karpathy(path)
    if name == "ctrl-retrieval":
        from .retrieval import ctrl_retrieval
        return ctrl_retrieval(int(path) if path else 1000)
    if name == "ctrl":
        from . import ctrl
        return ctrl.load(path) if path else ctrl.generated(seed=seed)
    raise UnbagError(f"unknown benchmark {name!r}; available: {', '.join(BENCHMARKS)} (as NAME or NAME:DIR)")


__all__ = ["Benchmark", "Item", "image_key", "load_image", "load", "BENCHMARKS"]
