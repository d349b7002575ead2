"""CLEVR-style 3D scenes, ray cast in torch: perspective camera, ground plane, shadows, metal.

A small vectorised analytic ray caster (no scene file, no external renderer): every pixel's rays
(2x2 supersampled) meet spheres, cubes rotated about the vertical and upright cylinders standing on
the ground plane z = 0. Shading: ambient + Lambert + Blinn-Phong from three point lights (CLEVR's
key, fill and back lights), each with a shadow ray. Rubber is matte; metal mirrors one bounce of the
scene and of a studio environment (a sky gradient with a bright soft box), so a flat metal face
shows the world around it instead of a uniform grey. Sizes follow CLEVR (Johnson et al. 2017,
arXiv 1612.06890): a sphere's radius and a cylinder's radius and half-height are the size's scale
(large 0.7, small 0.35); a cube's half-side is the scale / sqrt 2.

This module renders a scene it is given (`Scene3D`); which scenes the world draws is decided
elsewhere. `render` returns the picture and, from the centre ray of every pixel, the instance map
(object index + 1, 0 for the floor), from which each object's visible pixels and box are read.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from .styles import world

PX_3D = world("3d").px  # the 3D world's picture side (worlds/clevr3d.py)

# Bumped whenever the same scene renders to other pixels (recorded by 3D benchmarks; flat ones are
# at 1-2, so the numbers never meet). 3 (2026-12-02): the first 3D world.
RENDER_VERSION = 3
SCALE = {"large": 0.7, "small": 0.35}  # CLEVR's object scales
CLEVR_COLORS = {  # CLEVR's data/properties.json, RGB 0-255
    "gray": (87, 87, 87), "red": (173, 35, 35), "blue": (42, 75, 215), "green": (29, 105, 20),
    "brown": (129, 74, 25), "purple": (129, 38, 192), "cyan": (41, 208, 208), "yellow": (255, 238, 51)}
FLOOR = 0.55  # floor albedo (CLEVR's light grey ground)
AMBIENT = 0.22
BACKDROP = 0.12  # linear radiance behind the floor's far edge
EPS = 1e-4
BEVEL = 0.2  # rounded edges' radius, as a share of a cube's half-side or a cylinder's radius
BOUND = {1: math.sqrt(3) * 1.001, 2: math.sqrt(2) * 1.001}  # bounding-sphere radius / half-extent


@dataclass(frozen=True)
class Obj3D:
    """One object on the ground: shape (sphere | cube | cylinder), colour, size, material, centre
    (x, y) on the ground and rotation about the vertical (radians)."""
    shape: str
    color: str
    size: str
    material: str
    x: float
    y: float
    angle: float = 0.0

    @property
    def scale(self) -> float:
        return SCALE[self.size]

    @property
    def half(self) -> float:
        """Half-extent: the sphere's and cylinder's radius, the cube's half-side."""
        return self.scale / math.sqrt(2) if self.shape == "cube" else self.scale

    @property
    def radius(self) -> float:
        """Footprint radius on the ground (what CLEVR's min_dist is measured beyond)."""
        return self.half * math.sqrt(2) if self.shape == "cube" else self.half

    @property
    def centre(self) -> tuple[float, float, float]:
        return (self.x, self.y, self.half)


@dataclass(frozen=True)
class Light:
    position: tuple[float, float, float]
    intensity: float


@dataclass(frozen=True)
class Camera:
    position: tuple[float, float, float]
    target: tuple[float, float, float] = (0.0, 0.0, 0.0)
    fov: float = 2 * math.atan(18 / 35)  # horizontal: a 35 mm lens on Blender's 36 mm sensor (CLEVR's camera)

    def basis(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(forward, right, up) unit vectors."""
        pos, tgt = torch.tensor(self.position, dtype=torch.float64), torch.tensor(self.target, dtype=torch.float64)
        fwd = tgt - pos
        fwd = fwd / fwd.norm()
        right = torch.linalg.cross(fwd, torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64))
        right = right / right.norm()
        return fwd, right, torch.linalg.cross(right, fwd)

    def ground_axes(self) -> tuple[np.ndarray, np.ndarray]:
        """CLEVR's relation axes: (left, front) of the camera projected onto the ground, unit length."""
        fwd, right, _ = self.basis()
        left = -right.numpy()
        front = -fwd.numpy()
        left[2] = front[2] = 0.0
        return left / np.linalg.norm(left), front / np.linalg.norm(front)

    def project(self, points: np.ndarray, px: int) -> np.ndarray:
        """Pixel coordinates (x right, y down; pixel centres at k + 0.5) of world points [N, 3]."""
        fwd, right, up = (v.numpy() for v in self.basis())
        rel = np.asarray(points, dtype=np.float64) - np.asarray(self.position)
        z = rel @ fwd
        f = (px / 2) / math.tan(self.fov / 2)
        return np.stack([px / 2 + f * (rel @ right) / z, px / 2 - f * (rel @ up) / z], axis=-1)


@dataclass(frozen=True)
class Scene3D:
    objects: tuple[Obj3D, ...]
    camera: Camera
    lights: tuple[Light, ...]
    meta: dict = field(default_factory=dict, compare=False)


# CLEVR's defaults (render_images.py / base_scene.blend): camera and the key, fill and back lights
CAMERA = (7.36, -6.93, 4.96)
LIGHTS = (((6.44, -2.91, 6.13), 1.0), ((-4.67, -4.66, 3.17), 0.35), ((-1.17, 2.65, 5.82), 0.5))


def jittered(rng: np.random.Generator, camera_jitter: float = 0.5, light_jitter: float = 1.0) -> tuple[Camera, tuple[Light, ...]]:
    """CLEVR's camera and lights, each coordinate moved by a uniform draw in [-jitter, jitter]."""
    cam = Camera(tuple(float(c + rng.uniform(-camera_jitter, camera_jitter)) for c in CAMERA))
    lights = tuple(Light(tuple(float(c + rng.uniform(-light_jitter, light_jitter)) for c in p), i) for p, i in LIGHTS)
    return cam, lights


# -- intersections: rays o, d [R, 3] against every object -> t [R, N] (inf: no hit) ------------
# The tests take vectors component first (rel [3, R, N], dd [3, R, 1]): each component is one
# contiguous plane, so a dot product is three multiply-adds over whole planes. The arithmetic, and
# so every pixel, is the same as with the components last.

def _rot(angle: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.cos(angle), torch.sin(angle)


def _objects(scene: Scene3D) -> dict[str, torch.Tensor]:
    objs = scene.objects
    t = lambda v: torch.tensor(v, dtype=torch.float32)  # noqa: E731
    return {"c": t([o.centre for o in objs]).reshape(-1, 3), "h": t([o.half for o in objs]),
            "angle": t([o.angle for o in objs]), "kind": torch.tensor([("sphere", "cube", "cylinder").index(o.shape)
                                                                       for o in objs], dtype=torch.long)}


def _dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Sum over the first axis (3) of a * b, written out: the same bytes as `(a * b).sum(0)` (which
    adds them in this order), without a reduction kernel's cost on a 3-long axis."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _t_sphere(rel, dd, h, inf):
    b = _dot(rel, dd)
    disc = b * b - (_dot(rel, rel) - h * h)
    sq = disc.clamp_min(0).sqrt()
    t_near, t_far = -b - sq, -b + sq
    return torch.where(disc > 0, torch.where(t_near > EPS, t_near, torch.where(t_far > EPS, t_far, inf)), inf)


def _t_cube(rel, dd, h, angle, inf):
    """Slabs at +-h in the cube's frame (the ray rotated by -angle about z)."""
    cos, sin = _rot(angle)
    shape = rel.shape
    lo = torch.stack([cos * rel[0] + sin * rel[1], -sin * rel[0] + cos * rel[1], rel[2]])
    dl = torch.stack([(cos * dd[0] + sin * dd[1]).expand(shape[1:]), (-sin * dd[0] + cos * dd[1]).expand(shape[1:]),
                      dd[2].expand(shape[1:])])
    safe = torch.where(dl.abs() < 1e-9, torch.full_like(dl, 1e-9), dl)
    t1, t2 = (-h - lo) / safe, (h - lo) / safe
    tmin, tmax = torch.minimum(t1, t2).amax(0), torch.maximum(t1, t2).amin(0)
    return torch.where((tmax >= tmin) & (tmax > EPS), torch.where(tmin > EPS, tmin, tmax), inf)


def _t_cylinder(rel, dd, h, inf):
    """The side (radius h, height within the centre +- h) and the top cap."""
    a = dd[0] ** 2 + dd[1] ** 2
    bb = rel[0] * dd[0] + rel[1] * dd[1]
    disc = bb * bb - a * (rel[0] ** 2 + rel[1] ** 2 - h * h)
    t_side = (-bb - disc.clamp_min(0).sqrt()) / a.clamp_min(1e-12)
    side_ok = (disc > 0) & (t_side > EPS) & ((rel[2] + t_side * dd[2]).abs() <= h)
    dz = torch.where(dd[2].abs() < 1e-9, torch.full_like(dd[2], 1e-9), dd[2])
    t_cap = (h - rel[2]) / dz
    cx, cy = rel[0] + t_cap * dd[0], rel[1] + t_cap * dd[1]
    cap_ok = (t_cap > EPS) & (cx * cx + cy * cy <= h * h)
    return torch.minimum(torch.where(side_ok, t_side, inf), torch.where(cap_ok, t_cap, inf))


def intersect(o: torch.Tensor, d: torch.Tensor, g: dict[str, torch.Tensor]) -> torch.Tensor:
    """Nearest positive hit distance of each ray with each object [R, N] (inf where it misses);
    each shape's test runs on its own objects only."""
    inf = torch.tensor(float("inf"))
    out = torch.full((len(o), len(g["kind"])), float("inf"))
    oc, dc = o.T.contiguous()[:, :, None], d.T.contiguous()[:, :, None]  # [3, R, 1]
    for kind in range(3):
        cols = (g["kind"] == kind).nonzero()[:, 0]
        if not len(cols):
            continue
        rel, dd = oc - g["c"][cols].T[:, None, :], dc  # [3, R, n], [3, R, 1]
        h = g["h"][cols][None]
        if kind == 0:
            out[:, cols] = _t_sphere(rel, dd, h, inf)
            continue
        # the exact test only for rays that meet a bounding sphere (most rays miss every object)
        rows = torch.isfinite(_t_sphere(rel, dd, h * BOUND[kind], inf)).any(1).nonzero()[:, 0]
        if len(rows):
            rel, dd = rel[:, rows], dd[:, rows]
            t = _t_cube(rel, dd, h, g["angle"][cols][None], inf) if kind == 1 else _t_cylinder(rel, dd, h, inf)
            out[rows[:, None], cols[None]] = t
    return out


def _unit_or(v: torch.Tensor, fallback: torch.Tensor) -> torch.Tensor:
    """v normalised, or `fallback` where v is (nearly) zero."""
    norm = v.norm(dim=-1, keepdim=True)
    return torch.where(norm > 1e-6, v / norm.clamp_min(1e-9), fallback)


def normals(p: torch.Tensor, idx: torch.Tensor, g: dict[str, torch.Tensor]) -> torch.Tensor:
    """Unit surface normals at points p [R, 3] on objects idx [R]."""
    c, h, angle, kind = g["c"][idx], g["h"][idx], g["angle"][idx], g["kind"][idx]
    rel = p - c
    n_sph = rel / rel.norm(dim=-1, keepdim=True).clamp_min(1e-9)
    cos, sin = _rot(angle)
    lx, ly = cos * rel[:, 0] + sin * rel[:, 1], -sin * rel[:, 0] + cos * rel[:, 1]
    # bevelled edges, as CLEVR's SmoothCube and cylinder models have: the normal of a box whose
    # edges are rounded by BEVEL of its half-side (shading only; the silhouette stays the box's),
    # so edges catch highlights and a metal cube's mirrored world changes across its faces
    q = torch.stack([lx, ly, rel[:, 2]], -1) / h[:, None]
    n_loc = q - q.clamp(-(1 - BEVEL), 1 - BEVEL)
    flat = torch.zeros_like(q).scatter_(1, q.abs().argmax(-1, keepdim=True),
                                        torch.sign(q.gather(1, q.abs().argmax(-1, keepdim=True))))
    n_loc = _unit_or(n_loc, flat)
    n_cub = torch.stack([cos * n_loc[:, 0] - sin * n_loc[:, 1], sin * n_loc[:, 0] + cos * n_loc[:, 1], n_loc[:, 2]], -1)
    r = torch.stack([rel[:, 0], rel[:, 1]], -1).norm(dim=-1)
    radial = torch.stack([rel[:, 0], rel[:, 1], torch.zeros_like(rel[:, 0])], -1) / r.clamp_min(1e-9)[:, None]
    top = (rel[:, 2] >= h - 1e-3)[:, None]
    sharp = torch.where(top, torch.tensor([0.0, 0.0, 1.0]).expand_as(radial), radial)
    ro, zo = r / h, rel[:, 2] / h  # the rim between side and top is rounded the same way
    n_cyl = _unit_or(radial * (ro - ro.clamp_max(1 - BEVEL))[:, None]
                     + torch.tensor([0.0, 0.0, 1.0]) * (zo - zo.clamp_max(1 - BEVEL))[:, None], sharp)
    k = kind[:, None]
    return torch.where(k == 0, n_sph, torch.where(k == 1, n_cub, n_cyl))


def trace(o: torch.Tensor, d: torch.Tensor, g: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(distance, object index; -1 for the floor, -2 for the sky) of each ray's first hit."""
    n = g["c"].shape[0]
    t_obj = intersect(o, d, g) if n else torch.full((len(o), 0), float("inf"))
    best, idx = (t_obj.min(-1) if n else (torch.full((len(o),), float("inf")), torch.zeros(len(o), dtype=torch.long)))
    dz = d[:, 2]
    t_floor = torch.where(dz < -1e-9, -o[:, 2] / torch.where(dz < -1e-9, dz, torch.full_like(dz, -1.0)),
                          torch.full_like(dz, float("inf")))
    floor = t_floor < best
    t = torch.where(floor, t_floor, best)
    hit = torch.where(floor, torch.full_like(idx, -1), idx)
    return t, torch.where(torch.isinf(t), torch.full_like(idx, -2), hit)


# Shadow rays are culled: a point's ray to a light is traced only when it runs inside the cone
# from the light around some object's bounding sphere (widened by SHADOW_MARGIN, far more than
# float rounding moves it), which costs a dot product per point and object where the exact tests
# cost many. The cull is conservative, so the shadows are those of tracing every ray, to the byte:
# at 224 px 16% of the shadow rays are traced. Points SHADOW_NEAR or more from the light (the floor
# towards the horizon, up to ~20,000 units away in the top rows) are always traced: there float32
# cannot resolve the geometry (tracing finds spurious shadows from about 7,000 units out, in 40
# million points of 60 scenes), and the render keeps what tracing them gives.
SHADOW_MARGIN = 1e-2
SHADOW_NEAR = 1000.0


def _may_shadow(p: torch.Tensor, light: torch.Tensor, g: dict[str, torch.Tensor]) -> torch.Tensor:
    """Whether the ray from each point [R, 3] to the light may meet an object [R]: it lies inside an
    object's cone (its bounding sphere seen from the light) or the point is SHADOW_NEAR or more from the light."""
    a = g["c"] - light[None]  # [N, 3]
    far = a.norm(dim=-1)
    reach = torch.tensor([1.0, BOUND[1], BOUND[2]])[g["kind"]] * g["h"] + SHADOW_MARGIN
    if bool((reach >= far).any()):  # a light inside a bounding sphere: no cone to cull by
        return torch.ones(len(p), dtype=torch.bool)
    cos = (1 - (reach / far) ** 2).sqrt()  # each cone's half-angle, as its cosine
    v = torch.stack([p[:, 0] - light[0], p[:, 1] - light[1], p[:, 2] - light[2]])  # [3, R]: whole planes are fast
    vv = _dot(v, v)
    # inside object j's cone: v . a_j / |a_j| >= cos_j |v|, the largest left side over j scaled by 1 / cos_j
    return (((a / (far * cos)[:, None]) @ v).amax(0) >= vv.sqrt()) | (vv >= SHADOW_NEAR ** 2)


def in_shadow(p: torch.Tensor, light: torch.Tensor, g: dict[str, torch.Tensor],
              lit: torch.Tensor | None = None) -> torch.Tensor:
    """Whether an object stands between each point [R, 3] and a point light [3] (`lit`: the points
    whose answer is wanted, False for the rest)."""
    out = torch.zeros(len(p), dtype=torch.bool)
    if not g["c"].shape[0] or not len(p):
        return out
    traced = _may_shadow(p, light, g)
    rows = (traced if lit is None else traced & lit).nonzero()[:, 0]
    if len(rows):
        pr = p[rows]
        to = light[None] - pr
        dist = to.norm(dim=-1)
        t, _ = intersect(pr, to / dist[:, None], g).min(-1)
        out[rows] = t < dist
    return out


def environment(d: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
    """Radiance of the studio around the scene [R, 3]: dark above, a bright band at the horizon and
    a soft box towards the key light, so that what metal mirrors changes across even a flat face."""
    elev = d[:, 2].clamp(-1, 1)
    # a top face mirrors about the camera's own elevation (CLEVR's: sin 0.44), so a band of light
    # there lights metal tops with a gradient across them; a second, dimmer band at the horizon
    sky = 0.06 + 1.4 * torch.exp(-((elev - 0.42) ** 2) / 0.006) + 0.5 * torch.exp(-((elev - 0.1) ** 2) / 0.01)
    away = (d - key).T
    box = 3.0 * torch.exp(-_dot(away, away) / 0.03)
    return (sky + box)[:, None].expand(-1, 3)


def _shade(p, n, view, albedo, metal, g, lights, shadows: bool) -> torch.Tensor:
    """Ambient + Lambert (+ shadow rays) + Blinn-Phong from each light, per point."""
    out = albedo * AMBIENT
    lifted = p + n * 1e-3  # shadow rays leave from just above the surface
    any_metal = bool(metal.any())
    for pos, inten in lights:
        to = pos[None] - p
        dist = to.norm(dim=-1, keepdim=True)
        ldir = to / dist
        lam = _dot(n.T, ldir.T)[:, None].clamp_min(0)
        facing = lam > 0  # a point facing away gets nothing from this light, shadowed or not
        vis = (~in_shadow(lifted, pos, g, facing[:, 0])).float()[:, None] if shadows else torch.ones_like(lam)
        hv = ldir + view
        hv = hv / hv.norm(dim=-1, keepdim=True).clamp_min(1e-9)
        nh = _dot(n.T, hv.T)[:, None].clamp_min(0)
        if any_metal:
            spec = torch.where(metal, 1.2 * nh ** 80 + 0.5 * nh ** 16, 0.06 * nh ** 12)
            diffuse = albedo * lam * torch.where(metal, 0.15, 1.0)
        else:  # the same values, without the metal terms' arithmetic (the floor, rubber)
            spec, diffuse = 0.06 * nh ** 12, albedo * lam
        out = out + vis * inten * (diffuse + spec * facing)
    return out


def picture(scene: Scene3D, px: int = PX_3D, device: str | None = None) -> np.ndarray:
    """The RGB picture of a scene rendered on one torch thread (the same bytes in any process), or
    on `device` (a GPU: the same picture up to float rounding)."""
    if device is not None and torch.device(device).type != "cpu":
        return shaded(scene, px, device=device)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return shaded(scene, px)
    finally:
        torch.set_num_threads(before)


def render(scene: Scene3D, px: int = PX_3D, supersample: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """(RGB uint8 [px, px, 3], instance map int [px, px]: object index + 1, 0 for floor and sky)."""
    return shaded(scene, px, supersample), instances(scene, px)


def shaded(scene: Scene3D, px: int = PX_3D, supersample: int = 2, device: str | None = None) -> np.ndarray:
    """The RGB picture alone, uint8 [px, px, 3] (`supersample`^2 rays a pixel, averaged), traced
    on `device` (None: the CPU): every tensor below is made there."""
    if device is None or torch.device(device).type == "cpu":
        return _shaded(scene, px, supersample)  # no device mode: it costs a Python call per torch op
    with torch.device(device):
        return _shaded(scene, px, supersample)


def _rays(scene: Scene3D, side: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(origins, unit directions) [side * side, 3] of the rays through the centres of a side x side grid."""
    fwd, right, up = (v.float() for v in scene.camera.basis())
    f = (side / 2) / math.tan(scene.camera.fov / 2)
    k = (torch.arange(side, dtype=torch.float32) + 0.5 - side / 2) / f
    yy, xx = torch.meshgrid(-k, k, indexing="ij")
    d = fwd[None] + xx.reshape(-1, 1) * right[None] + yy.reshape(-1, 1) * up[None]
    d = d / d.norm(dim=-1, keepdim=True)
    return torch.tensor(scene.camera.position, dtype=torch.float32).expand_as(d), d


# From this side up a picture is supersampled only where it needs antialiasing (`_adaptive`): at
# 224 px most pixels lie inside one surface, where the 2x2 rays' mean is the centre ray's colour
# within a level or two, and tracing every ray cost 0.23 s a picture on one thread. Below it every
# pixel takes all its rays: the built-in model's 96 px pictures, and what it learned from, are
# drawn as they always were (render version 3); at this side and above the version is 4.
ADAPTIVE_PX = 160
EDGE_CONTRAST = 0.04  # linear radiance between 3x3 neighbours that marks a pixel for its 2x2 rays


def render_version(px: int) -> int:
    """The version of the pixels this renderer draws at side px (what results and folders record)."""
    return RENDER_VERSION + 1 if px >= ADAPTIVE_PX else RENDER_VERSION


def _shaded(scene: Scene3D, px: int, supersample: int) -> np.ndarray:
    g = _objects(scene)
    lights = [(torch.tensor(lt.position, dtype=torch.float32), lt.intensity) for lt in scene.lights]
    key = lights[0][0] / lights[0][0].norm()
    if supersample > 1 and px >= ADAPTIVE_PX:
        img = _adaptive(scene, px, supersample, g, lights, key)
    else:
        o, d = _rays(scene, px * supersample)
        rgb = _radiance(o, d, g, scene, lights, key, bounce=True)
        img = rgb.reshape(px, supersample, px, supersample, 3).mean((1, 3))
    return (img.clamp(0, 1) ** (1 / 2.2) * 255).round().to(torch.uint8).cpu().numpy()


def _adaptive(scene: Scene3D, px: int, ss: int, g, lights, key) -> torch.Tensor:
    """The linear picture [px, px, 3] from one ray through each pixel's centre, with the ss x ss
    rays of the full render traced only where a pixel's 3x3 neighbourhood holds another surface
    (an object's or the floor's edge) or a contrast above EDGE_CONTRAST (shadow edges, highlights,
    what metal mirrors): there the full render's own rays, elsewhere the centre ray's colour."""
    o, d = _rays(scene, px)
    rgb, hit = _radiance(o, d, g, scene, lights, key, bounce=True, with_hit=True)
    rgb = rgb.reshape(px, px, 3)
    pad = lambda x: torch.nn.functional.pad(x[None, None], (1, 1, 1, 1), mode="replicate")  # noqa: E731
    spread = lambda x: torch.nn.functional.max_pool2d(pad(x), 3, stride=1) + torch.nn.functional.max_pool2d(  # noqa: E731
        -pad(x), 3, stride=1)
    edge = (spread(hit.reshape(px, px).float()) > 0) | (spread(rgb.mean(-1)) > EDGE_CONTRAST)
    ys, xs = edge[0, 0].nonzero(as_tuple=True)
    if len(ys):
        # the full render's rays of those pixels: grid row y * ss + i, column x * ss + j
        fwd, right, up = (v.float() for v in scene.camera.basis())
        side = px * ss
        k = (torch.arange(side, dtype=torch.float32) + 0.5 - side / 2) / ((side / 2) / math.tan(scene.camera.fov / 2))
        sub = torch.arange(ss)
        rows = (ys[:, None, None] * ss + sub[None, :, None]).expand(-1, ss, ss).reshape(-1)
        cols = (xs[:, None, None] * ss + sub[None, None, :]).expand(-1, ss, ss).reshape(-1)
        dd = fwd[None] + k[cols].reshape(-1, 1) * right[None] + (-k[rows]).reshape(-1, 1) * up[None]
        dd = dd / dd.norm(dim=-1, keepdim=True)
        fine = _radiance(o[:1].expand_as(dd), dd, g, scene, lights, key, bounce=True)
        rgb[ys, xs] = fine.reshape(len(ys), ss * ss, 3).mean(1)
    return rgb


def instances(scene: Scene3D, px: int) -> np.ndarray:
    """The instance map alone (no shading: what placement checks visibility with), from the ray
    through each pixel's centre: object index + 1, 0 for floor and sky."""
    g = _objects(scene)
    fwd, right, up = (v.float() for v in scene.camera.basis())
    k = (torch.arange(px, dtype=torch.float32) + 0.5 - px / 2) / ((px / 2) / math.tan(scene.camera.fov / 2))
    yy, xx = torch.meshgrid(-k, k, indexing="ij")
    d = fwd[None] + xx.reshape(-1, 1) * right[None] + yy.reshape(-1, 1) * up[None]
    d = d / d.norm(dim=-1, keepdim=True)
    _, hit = trace(torch.tensor(scene.camera.position, dtype=torch.float32).expand_as(d), d, g)
    return (hit + 1).clamp_min(0).reshape(px, px).numpy().astype(np.int32)


def _albedo(scene: Scene3D) -> tuple[torch.Tensor, torch.Tensor]:
    cols = torch.tensor([[c / 255 for c in CLEVR_COLORS[o.color]] for o in scene.objects] or [[0.0, 0.0, 0.0]])
    cols = cols ** 2.2  # sRGB colours to linear
    metal = torch.tensor([o.material == "metal" for o in scene.objects] or [False])
    return cols, metal


def _radiance(o, d, g, scene, lights, key, bounce: bool, with_hit: bool = False):
    """Each ray's linear radiance [R, 3] (and, `with_hit`, what it hit: trace's index)."""
    t, hit = trace(o, d, g)
    cols, metals = _albedo(scene)
    # mirrored rays see the studio; the camera's own rays past the floor see a plain grey backdrop
    out = environment(d, key).clone() if not bounce else torch.full((len(d), 3), BACKDROP)
    floor, obj = hit == -1, hit >= 0
    p = o + d * torch.where(torch.isinf(t), torch.zeros_like(t), t)[:, None]
    view = -d
    if floor.any():
        pf = p[floor]
        nf = torch.tensor([0.0, 0.0, 1.0]).expand_as(pf)
        albedo = torch.full_like(pf, FLOOR ** 2.2)
        out[floor] = _shade(pf, nf, view[floor], albedo, torch.zeros(len(pf), 1, dtype=torch.bool), g, lights,
                            shadows=bounce)
    if obj.any():
        idx = hit[obj]
        po, no = p[obj], normals(p[obj], idx, g)
        metal = metals[idx][:, None]
        c = _shade(po, no, view[obj], cols[idx], metal, g, lights, shadows=bounce)
        if bounce and metal.any():
            m = metal[:, 0]
            dm = d[obj][m]
            nm = no[m]
            r = dm - 2 * _dot(dm.T, nm.T)[:, None] * nm
            refl = _radiance(po[m] + nm * 1e-3, r, g, scene, lights, key, bounce=False)
            c[m] = c[m] + 1.1 * cols[idx][m] ** 0.75 * refl  # metal tints what it mirrors
        out[obj] = c
    return (out, hit) if with_hit else out


def visible(instances: np.ndarray, n: int) -> list[dict]:
    """Per object: visible pixel count and the box [x0, y0, x1, y1] (pixel edges) of its visible pixels."""
    out = []
    for k in range(1, n + 1):
        ys, xs = np.nonzero(instances == k)
        out.append({"visible_px": int(len(xs)),
                    "box": [int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1] if len(xs) else None})
    return out


def object_boxes(scene: Scene3D, px: int) -> list:
    """Each object's box of visible pixels at px, None for a hidden one (worlds/clevr3d.py)."""
    return [v["box"] for v in visible(instances(scene, px), len(scene.objects))]
