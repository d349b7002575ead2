import math

import torch
import torch.nn.functional as F

from unbag.training.objectives.clip import clip_loss


def test_clip_loss_hand_computed():
    # two orthogonal pairs, scale 1: logits = identity, each CE = log(1 + e^-1) - ... by hand
    img = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    txt = torch.tensor([[2.0, 0.0], [0.0, 3.0]])  # normalised inside
    want = -math.log(math.e / (math.e + 1))
    assert torch.isclose(clip_loss(img, txt, torch.tensor(1.0)), torch.tensor(want))


def test_clip_loss_equals_open_clip_cliploss():
    from open_clip.loss import ClipLoss

    g = torch.Generator().manual_seed(0)
    img, txt = torch.randn(6, 8, generator=g), torch.randn(6, 8, generator=g)
    ours = clip_loss(img, txt, torch.tensor(7.0))
    theirs = ClipLoss()(F.normalize(img, dim=-1), F.normalize(txt, dim=-1), torch.tensor(7.0))
    assert torch.isclose(ours, theirs, atol=1e-6)
