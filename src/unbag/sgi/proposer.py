"""SGI's learned region source for 3D scenes (`--regions objects`): one box per object, with no
ground truth at test time.

`chroma` (regions.py) finds the objects of a CLEVR scene but returns two to five boxes for each on
crowded pictures (a component and its watershed pieces, the pieces a metal highlight splits), and
every extra box miscounts (docs/sgi.md). This source learns one box per object instead: a small
fully convolutional network in the manner of CenterNet (Zhou et al., arXiv 1904.07850) predicts,
at half the picture's resolution, a heatmap of object centres and each object's box size; the
heatmap's local maxima above a threshold become boxes; with `offset`, as in CenterNet, it also
predicts where in its cell each centre lies (at half resolution a cell is 2 px, and a pixel of
offset halves a small object's IoU). It is trained on pictures of 3D scenes placed by the world's
rules with the instance maps the renderer draws beside them, never on a test item: a scene's
objects are free to know there, as a detector's training boxes are. The scenes are the
`world@3d:pretraining` stream's and, with `crowded`, a share of fuller ones (CLEVR's scenes hold 3
to 10 objects; the stream's at most 5): two groups alike in all but shape (as a count item's) and
up to two more objects, 2 to 8 in all. A held-out set of the same mix measures the result.

    python -m unbag.training.proposer --out DIR --procs 2   # the shipped recipe (training/proposer.py): ~4 min
    # of pictures and ~22 min of training on 2 cores

It learns boxes in pixels at one picture size (`--px`), so a picture of another size is read
brought to that size and its boxes scaled back: on 1,000 held-out 64 px pictures, the proposer
trained at 96 px gives one box per object on 58% of them read as they are, on 98% brought to
96 px (the one trained at 64 px: 96%); the other way round, 60% and 97%.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..errors import UnbagError

SHIPPED = Path(__file__).resolve().parent.parent / "weights" / "proposer3d"
STRIDE = 2  # output cells per picture side: px / STRIDE
EPS = 1e-3  # px


class Proposer(nn.Module):
    """Picture [B, 3, px, px] in [0, 1] -> (centre logits [B, px/2, px/2], box [B, 2 or 4, px/2, px/2]:
    log width and height, and with `offset` the centre's x and y offset from its cell's centre, in cells)."""

    def __init__(self, width: int = 32, offset: bool = False):
        super().__init__()

        def block(cin, cout, stride=1, dilation=1):
            # batch norm: statistics fixed at inference, so a picture's boxes never depend on its batch
            return [nn.Conv2d(cin, cout, 3, stride, padding=dilation, dilation=dilation),
                    nn.BatchNorm2d(cout), nn.ReLU()]
        # dilated convolutions: the receptive field (about 60 px at the picture's scale) spans the largest object
        self.body = nn.Sequential(*block(3, width), *block(width, width, 2), *block(width, width, 1, 2),
                                  *block(width, width, 1, 4), *block(width, width, 1, 8))
        self.head = nn.Conv2d(width, 5 if offset else 3, 1)
        nn.init.constant_(self.head.bias[:1], -4.0)  # few centres: start near 0 probability

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.head(self.body(x))
        return out[:, 0], out[:, 1:]


def decode(logits: torch.Tensor, size: torch.Tensor, threshold: float = 0.3,
           pad: int = 0, scale: float = 1.0) -> list[list[tuple[int, int, int, int]]]:
    """Boxes (x0, y0, x1, y1, in picture pixels) at the heatmap's 3x3 local maxima above
    `threshold` (of two touching maxima, the stronger or first), per picture, strongest first; `size`
    holds each cell's log width and height, and its centre offset where it has four channels;
    `scale`: the original picture's side over the side the network read (boxes in its pixels)."""
    p = logits.sigmoid()
    peaks = (p == F.max_pool2d(p[:, None], 3, 1, 1)[:, 0]) & (p > threshold)
    px_h, px_w = (round(n * STRIDE * scale) for n in logits.shape[-2:])
    out = []
    for b in range(len(p)):
        ys, xs = torch.nonzero(peaks[b], as_tuple=True)
        order = p[b, ys, xs].argsort(descending=True)
        boxes, taken = [], []
        for i, j in zip(ys[order].tolist(), xs[order].tolist()):
            if any(abs(i - a) <= 1 and abs(j - c) <= 1 for a, c in taken):
                continue  # a plateau (two equal neighbours) is one peak
            taken.append((i, j))
            w, h = (v * scale for v in size[b, :2, i, j].exp().tolist())
            # the centre inside its cell: predicted where the network has an offset, else the cell's own
            dx, dy = size[b, 2:4, i, j].tolist() if size.shape[1] == 4 else (0.0, 0.0)
            cx, cy = (j + 0.5 + dx) * STRIDE * scale, (i + 0.5 + dy) * STRIDE * scale
            # outwards to whole pixels, a float's last bits (exp(log 14) = 14.000001) not counted
            box = (max(0, math.floor(cx - w / 2 + EPS) - pad), max(0, math.floor(cy - h / 2 + EPS) - pad),
                   min(px_w, math.ceil(cx + w / 2 - EPS) + pad), min(px_h, math.ceil(cy + h / 2 - EPS) + pad))
            if box[2] > box[0] and box[3] > box[1]:
                boxes.append(box)
        out.append(boxes)
    return out


@lru_cache(maxsize=1)
def shipped() -> tuple[Proposer, dict]:
    """The shipped proposer (eval mode, batch norms folded into their convolutions) and its record."""
    from safetensors.torch import load_file
    path = SHIPPED / "weights.safetensors"
    if not path.is_file():
        raise UnbagError(f"{path}: the learned region source's weights are missing (train them: python -m "
                         "unbag.training.proposer --out DIR)")
    record = json.loads((SHIPPED / "proposer.json").read_text())
    model = Proposer(record["width"], record.get("offset", False))
    model.load_state_dict(load_file(str(path)))
    return folded(model.eval()), record


def folded(model: Proposer) -> Proposer:
    """An eval-mode proposer with each batch norm folded into the convolution before it (the same
    function, one pass over the activations fewer: about 15% less time in passes of 16 on 2 cores)."""
    from torch.nn.utils.fusion import fuse_conv_bn_eval
    layers = list(model.body)
    for k, layer in enumerate(layers):
        if isinstance(layer, nn.BatchNorm2d):
            layers[k - 1], layers[k] = fuse_conv_bn_eval(layers[k - 1], layer), nn.Identity()
    model.body = nn.Sequential(*layers)
    return model


@lru_cache(maxsize=1)
def weights_id() -> str:
    """The SHA-1 of the shipped proposer's weights file (what results record of it)."""
    import hashlib
    path = SHIPPED / "weights.safetensors"
    return hashlib.sha1(path.read_bytes()).hexdigest() if path.is_file() else "missing"


def batch_size(h: int, w: int) -> int:
    """Pictures per network pass at h x w: 16 at the world's 64 px, fewer for larger pictures
    (one for a photo), so that a pass holds about as many pixels whatever the size."""
    return max(1, min(16, 16 * 64 * 64 // (h * w)))


def read_size(h: int, w: int, px: int) -> tuple[int, int]:
    """The even size the proposer reads an h x w picture at: its shorter side brought to the `px`
    it was trained at (it finds objects of the pixel sizes it learned: the module's docstring)."""
    s = px / min(h, w)
    return max(2, 2 * round(h * s / 2)), max(2, 2 * round(w * s / 2))


@torch.inference_mode()
def object_boxes_many(imgs: list[np.ndarray]) -> list[list[tuple[int, int, int, int]]]:
    """The boxes the shipped proposer finds in each picture (uint8 [h, w, 3]), in passes of
    `batch_size` pictures of one size; a picture of another size than the proposer's is read
    resized (bicubic, antialiased) to `read_size` and its boxes scaled back. A short last pass is
    filled up with blank pictures: every pass has the same shape, so the kernels, and how a
    picture's sums round, never depend on how many pictures came with it, nor on which
    (tests/sgi/test_proposer.py also checks that one and two threads give the same boxes)."""
    model, record = shipped()
    px = record["data"].get("px", 64)  # proposers recorded before --px were trained at 64 px
    out: list[list] = [[] for _ in imgs]
    by_size: dict[tuple, list[int]] = {}
    for k, img in enumerate(imgs):
        by_size.setdefault(img.shape[:2], []).append(k)
    for (h, w), idx in by_size.items():
        rh, rw = read_size(h, w, px)
        n = batch_size(rh, rw)
        for s in range(0, len(idx), n):
            part = idx[s:s + n]
            x = torch.zeros(n, 3, rh, rw)
            got = torch.from_numpy(np.stack([imgs[k] for k in part])).permute(0, 3, 1, 2).float() / 255
            if (rh, rw) != (h, w):
                got = F.interpolate(got, size=(rh, rw), mode="bicubic", antialias=True, align_corners=False).clamp(0, 1)
            x[:len(part)] = got
            logits, size = model(x)
            for k, boxes in zip(part, decode(logits[:len(part)], size[:len(part)], record["threshold"], scale=h / rh)):
                out[k] = boxes
    return out


def object_boxes(img: np.ndarray) -> list[tuple[int, int, int, int]]:
    """The boxes the shipped proposer finds in one picture (`object_boxes_many`)."""
    return object_boxes_many([img])[0]
