"""The 3D ray caster against closed forms: silhouettes, shadows, normals, determinism."""
import hashlib
import math

import numpy as np
import pytest
import torch

from unbag.world.render3d import Camera, Light, Obj3D, Scene3D, _objects, in_shadow, intersect, jittered, normals, render, visible


def _scene(*objs, camera=None):
    cam = camera or Camera((7.0, -6.5, 5.0))
    return Scene3D(tuple(objs), cam, (Light((6.0, -3.0, 6.0), 1.0), Light((-4.0, -4.0, 3.0), 0.35),
                                      Light((-1.0, 2.5, 6.0), 0.5)))


def _centre_rays(cam: Camera, px: int):
    fwd, right, up = (v.numpy() for v in cam.basis())
    k = (np.arange(px) + 0.5 - px / 2) / ((px / 2) / math.tan(cam.fov / 2))
    yy, xx = np.meshgrid(-k, k, indexing="ij")
    d = fwd[None] + xx.reshape(-1, 1) * right[None] + yy.reshape(-1, 1) * up[None]
    return d / np.linalg.norm(d, axis=1, keepdims=True)


def test_sphere_silhouette_is_where_rays_pass_within_its_radius():
    s = _scene(Obj3D("sphere", "red", "large", "rubber", 0.5, -0.3))
    px = 48
    _, inst = render(s, px)
    c, o = np.array(s.objects[0].centre), np.array(s.camera.position)
    d = _centre_rays(s.camera, px)
    dist = np.linalg.norm(np.cross(d, c - o), axis=1)  # distance from the sphere's centre to each ray
    want = (dist < 0.7).reshape(px, px)
    assert (inst == 1).sum() > 25 and (want != (inst == 1)).sum() <= 2  # at most grazing pixels differ
    centre = s.camera.project(c[None], px)[0]
    assert inst[int(centre[1]), int(centre[0])] == 1  # the projected centre is on the sphere


def test_shadow_of_a_sphere_under_a_light_above_it():
    r, height = 0.7, 6.0  # a light straight above the sphere's ground point, `height` over the floor
    g = _objects(_scene(Obj3D("sphere", "red", "large", "rubber", 0.0, 0.0)))
    light = torch.tensor([0.0, 0.0, height])
    radius = height * math.tan(math.asin(r / (height - r)))  # the tangent cone meets the floor here
    dist = torch.linspace(0.0, 2 * radius, 81)
    floor = torch.stack([dist, torch.zeros_like(dist), torch.full_like(dist, 1e-3)], -1)
    dark = in_shadow(floor, light, g)
    assert dark[dist < radius - 0.02].all() and not dark[dist > radius + 0.02].any()


def test_normals_of_each_shape():
    g = _objects(_scene(Obj3D("cube", "red", "large", "rubber", 0.0, 0.0, math.pi / 4),
                        Obj3D("cylinder", "red", "small", "rubber", 3.0, 0.0)))
    down = torch.tensor([[0.0, 0.0, -1.0]] * 2)
    o = torch.tensor([[0.05, 0.05, 5.0], [3.0, 0.1, 5.0]])
    t = intersect(o, down, g)
    assert t[0, 0] == pytest.approx(5 - 0.7 / math.sqrt(2) * 2, abs=1e-5)  # the cube's top face
    assert t[1, 1] == pytest.approx(5 - 0.7, abs=1e-5)  # the cylinder's cap: height 2 x 0.35
    n = normals(o + down * t.min(-1).values[:, None], t.min(-1).indices, g)
    assert torch.allclose(n, torch.tensor([[0.0, 0.0, 1.0]] * 2), atol=1e-5)
    side = torch.tensor([[5.0, 0.0, 0.2]])  # a horizontal ray at the cylinder's side
    t = intersect(side, torch.tensor([[-1.0, 0.0, 0.0]]), g)
    assert t[0, 1] == pytest.approx(5.0 - 3.0 - 0.35, abs=1e-5)
    n = normals(side + torch.tensor([[-1.0, 0.0, 0.0]]) * t[0, 1], torch.tensor([1]), g)
    assert torch.allclose(n, torch.tensor([[1.0, 0.0, 0.0]]), atol=1e-5)


def test_bevelled_edges_bend_the_normal_only_near_an_edge():
    from unbag.world.render3d import BEVEL
    g = _objects(_scene(Obj3D("cube", "red", "large", "rubber", 0.0, 0.0, 0.0)))
    h = 0.7 / math.sqrt(2)
    p = torch.tensor([[0.0, 0.0, 2 * h], [h, 0.0, 2 * h], [h * (1 - BEVEL / 2), 0.0, 2 * h]])
    n = normals(p, torch.tensor([0, 0, 0]), g)
    assert torch.allclose(n[0], torch.tensor([0.0, 0.0, 1.0]))  # a face's middle: the face's normal
    assert torch.allclose(n[1], torch.tensor([1.0, 0.0, 1.0]) / math.sqrt(2), atol=1e-5)  # on the edge: halfway
    assert torch.allclose(n[2], torch.tensor([0.5, 0.0, 1.0]) / math.sqrt(1.25), atol=1e-5)  # half a bevel in


def test_same_scene_same_bytes_and_visible_counts():
    rng = np.random.default_rng(3)
    cam, lights = jittered(rng)
    s = Scene3D((Obj3D("sphere", "cyan", "large", "metal", 0.0, 0.0), Obj3D("cube", "yellow", "small", "rubber", 1.5, 1.0, 0.4),
                 Obj3D("cylinder", "brown", "large", "metal", -1.5, -1.2)), cam, lights)
    a, ia = render(s, 32)
    b, ib = render(s, 32)
    assert a.tobytes() == b.tobytes() and np.array_equal(ia, ib) and a.shape == (32, 32, 3)
    vis = visible(ia, 3)
    assert [v["visible_px"] for v in vis] == [int((ia == k).sum()) for k in (1, 2, 3)]
    for k, v in enumerate(vis, 1):
        x0, y0, x1, y1 = v["box"]
        assert (ia[y0:y1, x0:x1] == k).sum() == v["visible_px"]


def test_render_version_keeps_its_pixels():
    """Render version 3's pictures, pinned: the pools and every staged measurement were drawn with
    them, so a change to the caster that moves a pixel must bump RENDER_VERSION (and this pin)."""
    from unbag.world.render3d import RENDER_VERSION, picture
    from unbag.world.swap3d import build_item
    h = hashlib.sha256()
    for cat in ("color", "size", "material", "count", "relation"):
        for scene in build_item(0, "ood", cat, 0, px=64).scenes:  # scenes placed and drawn at 64 px
            h.update(picture(scene, 64).tobytes())
    assert RENDER_VERSION == 3
    assert h.hexdigest() == "4bdd5ce94b7f0bd22c732b78bc1731b7d57f53980746d7924efa09bcaeee03fb"


def test_large_pictures_trace_their_2x2_rays_only_at_edges(monkeypatch):
    """From ADAPTIVE_PX up, a pixel inside one surface takes its centre ray's colour and an edge
    pixel the full render's 2x2 rays: within a few levels of tracing every ray, as version 4."""
    from unbag.world import render3d
    from unbag.world.swap3d import build_item

    px = render3d.ADAPTIVE_PX
    assert render3d.render_version(px) == 4 and render3d.render_version(px - 1) == render3d.RENDER_VERSION == 3
    scenes = [s for cat in ("color", "count") for s in build_item(0, "ood", cat, 0, px=64).scenes]
    fast = np.stack([render3d.picture(s, px) for s in scenes]).astype(int)
    monkeypatch.setattr(render3d, "ADAPTIVE_PX", 10**9)
    every = np.stack([render3d.picture(s, px) for s in scenes]).astype(int)
    diff = np.abs(fast - every).max(-1)
    # measured at 224 px on 6 pictures: at most 5 levels, 0.16% of the pixels more than 2 apart
    assert diff.max() <= 10 and (diff > 2).mean() < 0.005 and (diff == 0).mean() > 0.9


def test_render_version_4_keeps_its_pixels():
    """Version 4's pictures (edge-only 2x2 rays), pinned at ADAPTIVE_PX as version 3's are at 64 px;
    the hash was made before shadow rays were culled, which moved no byte."""
    from unbag.world.render3d import ADAPTIVE_PX, picture, render_version
    from unbag.world.swap3d import build_item
    h = hashlib.sha256()
    for cat in ("color", "relation"):
        for scene in build_item(0, "ood", cat, 0, px=64).scenes:
            h.update(picture(scene, ADAPTIVE_PX).tobytes())
    assert ADAPTIVE_PX == 160 and render_version(ADAPTIVE_PX) == 4
    assert h.hexdigest() == "489697ed65351012e25e391cb843f120d27c435c840993f3349adb8ee332ec99"


def test_culled_shadow_rays_give_the_shadows_of_tracing_every_ray():
    """in_shadow traces only the rays inside an object's bounding cone from the light (and every
    ray from beyond SHADOW_NEAR): the same answers as testing every ray against every object."""
    from unbag.world.render3d import SHADOW_NEAR, _may_shadow
    rng = np.random.default_rng(4)
    gen = torch.Generator().manual_seed(4)
    culled = 0
    for _ in range(6):
        cam, lights = jittered(rng)
        objs = [Obj3D(shape, "red", size, "rubber", float(x), float(y), float(a)) for shape, size, x, y, a in zip(
            rng.choice(["sphere", "cube", "cylinder"], 4), rng.choice(["large", "small"], 4),
            rng.uniform(-3, 3, 4), rng.uniform(-3, 3, 4), rng.uniform(0, math.pi, 4))]
        g = _objects(_scene(*objs, camera=cam))
        near = torch.rand(6000, 3, generator=gen) * torch.tensor([10.0, 10.0, 1.6]) - torch.tensor([5.0, 5.0, 0.0])
        far = torch.tensor([[SHADOW_NEAR * 3, 7.0, 1e-3], [-9000.0, 2.0e4, 1e-3]])
        p = torch.cat([near, far])
        for lt in lights:
            light = torch.tensor(lt.position)
            to = light[None] - p
            dist = to.norm(dim=-1)
            every = intersect(p, to / dist[:, None], g).min(-1).values < dist
            traced = _may_shadow(p, light, g)
            assert torch.equal(in_shadow(p, light, g), every) and traced[-2:].all()
            culled += int((~traced).sum())
            lit = torch.rand(len(p), generator=gen) > 0.5  # the answers asked for; the rest read False
            assert torch.equal(in_shadow(p, light, g, lit), every & lit)
    assert culled > 0.5 * 6 * 3 * 6000 and 0 < int(every.sum()) < len(p)  # most rays are culled, some shadowed


@pytest.mark.parametrize("shape", ["cube", "sphere", "cylinder"])
def test_metal_and_rubber_differ_on_every_shape(shape):
    """The same object in metal and in rubber gives other pixels (measured: 16-33 of 255 on average
    at 64 px; a metal cube mirroring only a uniform floor would differ by its darkening alone)."""
    rng = np.random.default_rng(1)
    cam, lights = jittered(rng)
    got = {}
    for material in ("rubber", "metal"):
        s = Scene3D((Obj3D(shape, "gray", "large", material, 0.3, 0.0, 0.5),
                     Obj3D("sphere", "red", "large", "rubber", -1.5, 1.8)), cam, lights)
        img, inst = render(s, 64)
        got[material] = img[inst == 1].astype(float)
    assert len(got["metal"]) > 40 and np.abs(got["metal"] - got["rubber"]).mean() > 12


def test_clevr_placement_rules_and_perspective():
    from unbag.world.scene3d import MARGIN, MIN_DIST, min_visible, place, random_object
    rng = np.random.default_rng(0)
    rows, heights = [], []
    for _ in range(12):
        scene, img, inst = place(rng, [random_object(rng) for _ in range(int(rng.integers(3, 6)))], px=48)
        left, front = scene.camera.ground_axes()
        objs = scene.objects
        for i, a in enumerate(objs):
            for b in objs[i + 1:]:
                v = np.array([a.x - b.x, a.y - b.y, 0.0])
                assert np.hypot(v[0], v[1]) - a.radius - b.radius >= MIN_DIST
                assert abs(v @ left) >= MARGIN and abs(v @ front) >= MARGIN
        for k, (o, vis) in enumerate(zip(objs, visible(inst, len(objs)))):
            assert vis["visible_px"] >= min_visible(48)
            if o.shape == "sphere" and o.size == "large" and vis["visible_px"] >= 0.9 * math.pi * 9:
                rows.append(scene.camera.project(np.array([o.centre]), 48)[0, 1])
                heights.append(vis["box"][3] - vis["box"][1])
    # perspective: nearer (lower in the picture) looks bigger
    if len(rows) >= 4:
        assert np.corrcoef(rows, heights)[0, 1] > 0
    again = place(np.random.default_rng(0), [random_object(np.random.default_rng(0))], px=32)
    assert again[1].tobytes() == place(np.random.default_rng(0), [random_object(np.random.default_rng(0))], px=32)[1].tobytes()


def test_bounding_sphere_culling_loses_no_hit():
    from unbag.world.render3d import _t_cube, _t_cylinder
    g = _objects(_scene(Obj3D("cube", "red", "large", "rubber", 0.2, 0.1, 0.7), Obj3D("cylinder", "red", "large",
                                                                                     "metal", -1.0, 1.0)))
    gen = torch.Generator().manual_seed(0)
    o = torch.rand(4000, 3, generator=gen) * torch.tensor([8.0, 8.0, 3.0]) - torch.tensor([4.0, 4.0, 0.0])
    d = torch.nn.functional.normalize(torch.randn(4000, 3, generator=gen), dim=-1)
    t = intersect(o, d, g)
    inf = torch.tensor(float("inf"))
    rel = o.T[:, :, None] - g["c"].T[:, None, :]  # component first: [3, rays, objects]
    dd = d.T[:, :, None]
    full_cube = _t_cube(rel[:, :, :1], dd, g["h"][None, :1], g["angle"][None, :1], inf)
    full_cyl = _t_cylinder(rel[:, :, 1:], dd, g["h"][None, 1:], inf)
    assert torch.isfinite(full_cube).sum() > 50 and torch.equal(t[:, :1], full_cube) and torch.equal(t[:, 1:], full_cyl)


def test_chroma_regions_split_touching_colours_and_skip_shadows():
    from unbag.sgi.regions import chroma_boxes
    img = np.full((40, 40, 3), 120, np.uint8)
    img[10:20, 10:20] = (173, 35, 35)   # red, touching
    img[10:20, 20:30] = (42, 75, 215)   # blue
    img[12:16, 12:15] = (200, 60, 60)  # a brighter patch of the red one: same colour, still one object
    img[20:26, 14:28] = 80  # a shadow: darker floor (by less than 1.5 x the contrast), no object
    img[30:36, 2:8] = 30  # a dark grey object: much darker than the floor
    got = sorted(map(tuple, chroma_boxes(img)))
    assert got == [(2, 30, 8, 36), (10, 10, 20, 20), (20, 10, 30, 20)]


def test_chroma_regions_find_most_objects_of_placed_scenes():
    from unbag.sgi.regions import RegionConfig, iou, regions_for
    from unbag.world.scene3d import place, random_object
    rng = np.random.default_rng(21)
    hits = []
    for _ in range(15):
        scene, img, inst = place(rng, [random_object(rng) for _ in range(int(rng.integers(3, 6)))], px=64)
        singles = [r[0] for r in regions_for(img, RegionConfig.parse("chroma")) if len(r) == 1]
        hits += [any(iou(v["box"], s) >= 0.5 for s in singles) for v in visible(inst, len(scene.objects))]
    assert np.mean(hits) >= 0.75  # bench/regions3d.py: 92.9% on 900 objects at 64 px, 96.3% at 128 px
