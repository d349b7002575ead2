"""Trust II: hostile or careless inputs (issue: no file read or deleted outside unbag's own, every
input in a result's fingerprint, no traceback). One test per case; each failed before its fix."""
import io
import json
import os
import signal
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from unbag.cli import main
from unbag.errors import UnbagError


def _run(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def _img(path: Path, k: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((32, 32, 3), 40 * k % 255, np.uint8)).save(path)
    return path


def _sc(root: Path, filenames=("0.jpg", "1.jpg"), image=True) -> Path:
    """A SugarCrepe release with one subset whose items name `filenames` (under val2017/)."""
    data = {}
    for k, fn in enumerate(filenames):
        if image and not os.path.isabs(fn) and ".." not in fn:
            _img(root / "val2017" / fn, k)
        data[str(k)] = {"filename": fn, "caption": f"a red cube number {k}", "negative_caption": f"a blue cube {k}"}
    (root / "data").mkdir(parents=True, exist_ok=True)
    (root / "data" / "swap_att.json").write_text(json.dumps(data))
    return root


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A saved random model (the same weights at every load)."""
    from unbag import models
    return models.load("open_clip:unbag-tiny@random").save(tmp_path_factory.mktemp("tiny") / "tiny")


@pytest.fixture
def counted(monkeypatch):
    from unbag import evaluation
    real, calls = evaluation.evaluate, []
    monkeypatch.setattr(evaluation, "evaluate", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    return calls


def _plan(tmp_path, tiny, bench, out=None, models=None, benches=None, protocols=None, extra=""):
    p = tmp_path / "plan.toml"
    models = models or {"tiny": str(tiny)}
    benches = benches or {"sc": f"sugarcrepe:{bench}"}
    protocols = protocols or {"global": "global"}
    tables = "".join(f'[{t}]\n' + "".join(f'"{k}" = "{v}"\n' for k, v in d.items())
                     for t, d in (("models", models), ("benchmarks", benches), ("protocols", protocols)))
    p.write_text(f'out = "{out or tmp_path / "out"}"\n{extra}\n{tables}')
    return p


# -- security: nothing outside what the user named is read into a result or report -----------

def test_report_copies_no_file_the_explain_index_names_outside_the_run(tmp_path, tiny, capsys):
    from unbag.runner import run_plan
    sc = _sc(tmp_path / "sc")
    run_plan(_plan(tmp_path, tiny, sc), progress=False)
    secret = tmp_path / "secret.txt"
    secret.write_text("private")
    expl = tmp_path / "out" / "explain"
    expl.mkdir()
    (expl / "link.png").symlink_to(secret)
    _img(expl / "plain.png")  # a PNG unbag did not draw
    (expl / "index.json").write_text(json.dumps([{"file": str(secret), "caption": "abs"},
                                                 {"file": "../../secret.txt", "caption": "up"},
                                                 {"file": "link.png", "caption": "link"},
                                                 {"file": "plain.png", "caption": "not unbag's"}]))
    code, _, err = _run(["report", str(tmp_path / "out"), "--out", str(tmp_path / "rep")], capsys)
    assert code == 0 and err.count("left out") == 4
    copied = [p for p in (tmp_path / "rep").rglob("*") if p.is_file()]
    assert not any(p.read_bytes() == b"private" for p in copied)
    assert list((tmp_path / "rep" / "explain").iterdir()) == []
    assert "Left out" in (tmp_path / "rep" / "index.html").read_text()


def test_a_results_link_in_a_run_folder_is_refused(tmp_path, tiny, capsys):
    from unbag.runner import run_plan
    run_plan(_plan(tmp_path, tiny, _sc(tmp_path / "sc")), progress=False)
    cell = tmp_path / "out" / "results" / "tiny__sc__global.json"
    elsewhere = tmp_path / "elsewhere.json"
    cell.rename(elsewhere)
    cell.symlink_to(elsewhere)
    code, _, err = _run(["report", str(tmp_path / "out"), "--out", str(tmp_path / "rep")], capsys)
    assert code == 2 and "leads out of" in err and not (tmp_path / "rep").exists()


@pytest.mark.parametrize("how", ["absolute", "dotdot"])
def test_image_paths_a_release_writes_out_of_its_folder_are_refused_unless_asked(how, tmp_path):
    from unbag import benchmarks
    outside = _img(tmp_path / "outside" / "o.jpg", 3)
    root = tmp_path / "sc"
    _sc(root, (str(outside), "1.jpg") if how == "absolute" else ("../../outside/o.jpg", "1.jpg"))
    with pytest.raises(UnbagError, match=r"swap_att.json: item '0'.*outside the benchmark's folder.*absolute path or "
                                         r"climbs out with '\.\.'.*--images-outside-root"):
        benchmarks.load(f"sugarcrepe:{root}")
    b = benchmarks.load(f"sugarcrepe:{root}", outside_root=True)
    assert b.info["images_outside_root"] is True
    before = b.info["files"]
    _img(outside, 7)  # another picture outside the folder: the fingerprint follows it
    os.utime(outside, ns=(1, 1))
    assert benchmarks.files_fingerprint(f"sugarcrepe:{root}", outside_root=True) != before


@pytest.mark.parametrize("how", ["symlink", "symlinked folder"])
def test_links_the_user_made_in_a_benchmark_folder_are_followed(how, tmp_path):
    from unbag import benchmarks
    outside = _img(tmp_path / "outside" / "o.jpg", 3)
    root = tmp_path / "sc"
    if how == "symlink":
        _sc(root, ("0.jpg", "1.jpg"))
        (root / "val2017" / "0.jpg").unlink()
        (root / "val2017" / "0.jpg").symlink_to(outside)
    else:
        _sc(root, ("sub/o.jpg", "1.jpg"), image=False)
        _img(root / "val2017" / "1.jpg")
        (root / "val2017" / "sub").symlink_to(outside.parent)
    b = benchmarks.load(f"sugarcrepe:{root}")
    assert "images_outside_root" not in b.info and len(b.items) == 2
    _img(tmp_path / "other" / "o.jpg", 9)
    os.utime(tmp_path / "other" / "o.jpg", ns=(5, 5))
    link = root / "val2017" / ("0.jpg" if how == "symlink" else "sub")
    link.unlink()
    link.symlink_to(tmp_path / "other" / ("o.jpg" if how == "symlink" else ""))  # re-pointed: another file read
    assert benchmarks.files_fingerprint(f"sugarcrepe:{root}") != b.info["files"]


def test_images_outside_root_are_recorded_in_the_results(tmp_path, tiny, capsys):
    outside = _img(tmp_path / "o.jpg", 3)
    root = _sc(tmp_path / "sc", (str(outside), "1.jpg"))
    args = ["eval", "--model", str(tiny), "--bench", f"sugarcrepe:{root}", "--out", str(tmp_path / "r.json"), "--quiet"]
    code, _, err = _run(args, capsys)
    assert code == 2 and "outside the benchmark's folder" in err and not (tmp_path / "r.json").exists()
    assert _run(args + ["--images-outside-root"], capsys)[0] == 0
    assert json.loads((tmp_path / "r.json").read_text())["benchmark"]["images_outside_root"] is True


def _bomb(path: Path, side: int = 20000) -> Path:
    """A tiny PNG whose header says side x side pixels."""
    buf = io.BytesIO()
    Image.new("RGB", (1, 1)).save(buf, format="PNG")
    data = bytearray(buf.getvalue())
    ihdr = struct.pack(">II", side, side) + bytes(data[24:29])
    data[16:29] = ihdr
    data[29:33] = struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    path.write_bytes(bytes(data))
    return path


def test_a_decompression_bomb_is_an_error_naming_the_file(tmp_path, tiny, capsys):
    root = _sc(tmp_path / "sc")
    _bomb(root / "val2017" / "0.jpg")
    code, _, err = _run(["eval", "--model", str(tiny), "--bench", f"sugarcrepe:{root}", "--quiet"], capsys)
    assert code == 2 and "0.jpg" in err and "too large" in err and "Traceback" not in err


# -- stale or wrong numbers: every input of a cell in its fingerprint ------------------------

def test_a_changed_model_config_runs_the_cell_again(tmp_path, counted):
    from unbag import models
    from unbag.runner import run_plan
    tiny = models.load("open_clip:unbag-tiny@random").save(tmp_path / "tiny")
    plan = _plan(tmp_path, tiny, _sc(tmp_path / "sc"))
    run_plan(plan, progress=False)
    run_plan(plan, progress=False)
    assert len(counted) == 1
    cfg = json.loads((tiny / "open_clip_config.json").read_text())
    cfg["preprocess_cfg"]["mean"] = [0.5, 0.5, 0.5]  # the weights unchanged
    (tiny / "open_clip_config.json").write_text(json.dumps(cfg))
    run_plan(plan, progress=False)
    assert len(counted) == 2


def test_a_heads_weights_and_training_config_are_in_its_record(tmp_path):
    import shutil

    from unbag.heads.shipped import HEADS_DIR
    from unbag.protocols import build
    head = tmp_path / "head"
    shutil.copytree(HEADS_DIR / "tflocal" / "pretrained", head)
    first = build(f"head:{head}", {}, "ctrl")[1]
    rec = json.loads((head / "head.json").read_text())
    rec["train"]["lr"] *= 2
    (head / "head.json").write_text(json.dumps(rec))
    second = build(f"head:{head}", {}, "ctrl")[1]
    w = bytearray((head / "head.safetensors").read_bytes())
    w[-1] ^= 1
    (head / "head.safetensors").write_bytes(bytes(w))
    third = build(f"head:{head}", {}, "ctrl")[1]
    assert len({first["head_id"], second["head_id"], third["head_id"]}) == 3


def test_images_behind_a_symlinked_folder_are_in_the_fingerprint(tmp_path):
    from unbag import benchmarks
    real = tmp_path / "photos"  # outside the benchmark folder, reached through a link in it
    root = _sc(tmp_path / "sc", ("imgs/0.jpg", "imgs/1.jpg"), image=False)
    _img(real / "0.jpg")
    _img(real / "1.jpg", 1)
    (root / "val2017").mkdir(exist_ok=True)
    (root / "val2017" / "imgs").symlink_to(real)
    spec = f"sugarcrepe:{root}"
    before = benchmarks.files_fingerprint(spec)
    st = (real / "1.jpg").stat()
    os.utime(real / "1.jpg", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # replaced: same size, a new time
    assert benchmarks.files_fingerprint(spec) != before
    assert benchmarks.load(spec).info["files"] == benchmarks.files_fingerprint(spec)


@pytest.mark.slow
def test_a_rerun_reuses_the_3d_ctrls_sgi_and_region_head_cells(tmp_path, counted):
    """Found by rerunning the demo: its SGI, SGI-paper and TFRegions cells ran again every time (the
    reuse check built their options without the 3D ctrl's declared regions)."""
    from unbag.runner import run_plan
    p = tmp_path / "plan.toml"
    p.write_text(f'out = "{tmp_path / "out"}"\nper_category = 1\nexplain = []\n[models]\npretrained = "builtin"\n'
                 '[benchmarks]\nctrl = "ctrl"\n[protocols]\nSGI = "sgi"\nSGI-paper = "sgi:paper"\n'
                 'TFRegions = "head:builtin:tfregions"\n')
    run_plan(p, progress=False)
    assert len(counted) == 3
    run_plan(p, progress=False)
    assert len(counted) == 3


# -- wrong numbers, no warning ---------------------------------------------------------------

def test_names_with_double_underscores_never_share_a_file(tmp_path, tiny, capsys):
    from unbag.runner import cell_file, run_plan
    assert cell_file("a", "c__d", "g") != cell_file("a__c", "d", "g")
    sc = _sc(tmp_path / "sc")
    plan = _plan(tmp_path, tiny, sc, models={"a": str(tiny), "a__c": str(tiny)},
                 benches={"c__d": f"sugarcrepe:{sc}", "d": f"sugarcrepe:{sc}"})
    results = run_plan(plan, progress=False)
    files = sorted(p.name for p in (tmp_path / "out" / "results").glob("*.json"))
    assert len(files) == 4 and len(results) == 4
    for p in (tmp_path / "out" / "results").glob("*.json"):
        assert json.loads(p.read_text())["cell"]["file"] == f"results/{p.name}"
    assert _run(["report", str(tmp_path / "out"), "--out", str(tmp_path / "rep")], capsys)[0] == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    # Markdown's marks escaped (it renders as a__c, global [paper])
    assert r"| a\_\_c | global \[paper\] |" in md and r"| a | global \[paper\] |" in md


def test_a_report_shows_the_cells_of_the_folders_current_plan(tmp_path, tiny, capsys):
    from unbag.runner import run_plan
    sc = _sc(tmp_path / "sc")
    run_plan(_plan(tmp_path, tiny, sc, models={"first": str(tiny)}), progress=False)
    run_plan(_plan(tmp_path, tiny, sc, models={"second": str(tiny)}), progress=False)
    code, _, err = _run(["report", str(tmp_path / "out"), "--out", str(tmp_path / "rep")], capsys)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert code == 0 and "| second |" in md and "| first |" not in md
    assert "not cells of its current plan" in err and "first__sc__global.json" in err


def test_an_imagefolder_with_a_symlink_loop_counts_each_image_once(tmp_path):
    from unbag import benchmarks
    for c in ("cat", "dog"):
        for k in range(3):
            _img(tmp_path / "f" / c / f"{k}.png", k)
        (tmp_path / "f" / c / "loop").symlink_to(tmp_path / "f" / c)
    assert len(benchmarks.load(f"imagefolder:{tmp_path / 'f'}").images) == 6


def test_a_key_given_twice_is_an_error_naming_it(tmp_path, tiny, capsys):
    root = _sc(tmp_path / "sc")
    f = root / "data" / "swap_att.json"
    f.write_text(f.read_text().replace('{"0": {', '{"1": {"filename": "1.jpg", "caption": "x", '
                                       '"negative_caption": "y"}, "0": {', 1))
    code, _, err = _run(["eval", "--model", str(tiny), "--bench", f"sugarcrepe:{root}", "--quiet"], capsys)
    assert code == 2 and "swap_att.json" in err and "'1' appears twice" in err


def test_a_16_bit_png_decodes_to_its_grey_levels(tmp_path):
    from unbag.benchmarks.base import load_image
    ramp = np.linspace(0, 65535, 64, dtype=np.uint16)[None].repeat(8, 0)
    Image.fromarray(ramp).save(tmp_path / "g16.png")
    got = np.asarray(load_image(str(tmp_path / "g16.png"), "test"))
    assert got.shape == (8, 64, 3) and got[0, 0, 0] == 0 and got[0, -1, 0] == 255
    assert abs(int(got[0, 32, 0]) - round(ramp[0, 32] / 257)) <= 1


@pytest.mark.parametrize("value, shown", [("NaN", "nan"), (7.5, "7.5"), (-0.1, "-0.1"), ("Infinity", "inf")])
def test_report_refuses_a_metric_that_is_not_a_fraction(value, shown, tmp_path, tiny, capsys):
    root = _sc(tmp_path / "sc")
    r = tmp_path / "r.json"
    assert _run(["eval", "--model", str(tiny), "--bench", f"sugarcrepe:{root}", "--out", str(r), "--quiet"], capsys)[0] == 0
    text = r.read_text()
    key = next(iter(json.loads(text)["metrics"]))
    data = json.loads(text)
    data["metrics"][key] = float(value) if not isinstance(value, str) else float(value.lower().replace("infinity", "inf"))
    r.write_text(json.dumps(data))
    code, _, err = _run(["report", str(r), "--out", str(tmp_path / "rep")], capsys)
    assert code == 2 and str(r) in err and f"metrics['{key}']" in err and shown in err.lower()
    assert not (tmp_path / "rep").exists()


def test_world_build_refuses_no_items_and_caps_processes(tmp_path, capsys):
    code, _, err = _run(["world", "build", "--out", str(tmp_path / "w"), "--per-category", "0", "--quiet"], capsys)
    assert code == 2 and "--per-category 0" in err and not (tmp_path / "w").exists()
    from unbag.world.styles import check_render
    with pytest.warns(UserWarning, match="--procs 1000"):
        assert check_render(64, 1000) == (os.cpu_count() or 1)


# -- lost or half-written files --------------------------------------------------------------

def test_a_plan_refuses_the_folder_above_and_the_one_it_runs_in(tmp_path, tiny, monkeypatch, capsys):
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "plan.toml").write_text("mine")
    (tmp_path / "summary.json").write_text("mine")
    monkeypatch.chdir(work)
    for out in ("..", "."):
        plan = _plan(work, tiny, _sc(tmp_path / "sc"), out=out)
        code, _, err = _run(["run", str(plan), "--quiet"], capsys)
        assert code == 2 and "runs in" in err, err
    assert (tmp_path / "plan.toml").read_text() == "mine" and (tmp_path / "summary.json").read_text() == "mine"


def test_a_plan_folder_of_other_files_is_refused(tmp_path, tiny, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("x")
    code, _, err = _run(["run", str(_plan(tmp_path, tiny, _sc(tmp_path / "sc"), out=out)), "--quiet"], capsys)
    assert code == 2 and "notes.txt" in err and sorted(os.listdir(out)) == ["notes.txt"]
    assert "--overwrite" not in err  # plans have none: a plan's folder is never replaced


@pytest.mark.parametrize("field, spec", [("models", "open_clip:nonesuch@random"), ("models", "builtin:nonesuch"),
                                         ("models", "/no/such/model"), ("benchmarks", "nonesuch:x"),
                                         ("protocols", "nonesuch")])
def test_a_plan_with_a_bad_spec_writes_nothing(field, spec, tmp_path, tiny, capsys):
    sc = _sc(tmp_path / "sc")
    kw = {"models": {"tiny": str(tiny), "bad": spec}} if field == "models" else \
        {"benches": {"bad": spec}} if field == "benchmarks" else {"protocols": {"bad": spec}}
    code, _, err = _run(["run", str(_plan(tmp_path, tiny, sc, **kw)), "--quiet"], capsys)
    assert code == 2 and f"{field}.bad" in err and not (tmp_path / "out").exists()


def test_report_and_world_build_keep_a_users_file_inside_their_folders(tmp_path, tiny, capsys):
    r = tmp_path / "r.json"
    assert _run(["eval", "--model", str(tiny), "--bench", f"sugarcrepe:{_sc(tmp_path / 'sc')}", "--out", str(r),
                 "--quiet"], capsys)[0] == 0
    assert _run(["report", str(r), "--out", str(tmp_path / "rep")], capsys)[0] == 0
    (tmp_path / "rep" / "data" / "mine.txt").write_text("keep")
    code, _, err = _run(["report", str(r), "--out", str(tmp_path / "rep")], capsys)
    assert code == 2 and "data/mine.txt" in err and (tmp_path / "rep" / "data" / "mine.txt").read_text() == "keep"
    w = ["world", "build", "--out", str(tmp_path / "w"), "--per-category", "1", "--style", "flat", "--quiet"]
    assert _run(w, capsys)[0] == 0
    (tmp_path / "w" / "images" / "mine.png").write_text("keep")
    code, _, err = _run(w, capsys)
    assert code == 2 and "images/mine.png" in err and (tmp_path / "w" / "images" / "mine.png").read_text() == "keep"


def test_report_never_replaces_a_folder_holding_its_input(tmp_path, tiny, capsys):
    from unbag.runner import run_plan
    run_plan(_plan(tmp_path, tiny, _sc(tmp_path / "sc"), out=tmp_path / "p" / "run"), progress=False)
    for out in (tmp_path / "p", tmp_path / "p" / "run"):
        code, _, err = _run(["report", str(tmp_path / "p" / "run"), "--out", str(out), "--overwrite"], capsys)
        assert code == 2 and "an input of this command" in err
    assert (tmp_path / "p" / "run" / "summary.json").is_file()


def test_eval_keeps_a_users_files_and_never_writes_over_its_inputs(tmp_path, tiny, capsys):
    sc = _sc(tmp_path / "sc")
    out = tmp_path / "r.json"
    (tmp_path / "r.items.jsonl").write_text("my notes\n")
    args = ["eval", "--model", str(tiny), "--bench", f"sugarcrepe:{sc}", "--out", str(out), "--quiet"]
    code, _, err = _run(args, capsys)
    assert code == 2 and "r.items.jsonl" in err and "--overwrite" in err and not out.exists()
    assert _run(args + ["--overwrite"], capsys)[0] == 0
    assert _run(args, capsys)[0] == 0  # its own pair now: replaced without asking
    own = sc / "data" / "swap_att.json"
    before = own.read_text()
    code, _, err = _run(["eval", "--model", str(tiny), "--bench", f"sugarcrepe:{sc}", "--out", str(own), "--overwrite",
                         "--quiet"], capsys)
    assert code == 2 and "an input of this command" in err and own.read_text() == before


def test_negatives_and_explain_keep_a_users_files(tmp_path, capsys):
    caps = tmp_path / "caps.jsonl"
    _img(tmp_path / "a.png")
    caps.write_text(json.dumps({"image": "a.png", "caption": "a red cube left of a blue sphere"}) + "\n")
    mine = tmp_path / "neg.json"
    mine.write_text("mine")
    args = ["negatives", "--data", f"jsonl:{caps}", "--out", str(mine), "--quiet"]
    code, _, err = _run(args, capsys)
    assert code == 2 and "unbag did not write" in err and mine.read_text() == "mine"
    assert _run(args + ["--overwrite"], capsys)[0] == 0 and json.loads(mine.read_text())[0]["original"]
    assert _run(args, capsys)[0] == 0  # its own
    code, _, err = _run(["negatives", "--data", f"jsonl:{caps}", "--out", str(caps), "--overwrite", "--quiet"], capsys)
    assert code == 2 and "an input" in err
    png = tmp_path / "mine.png"
    _img(png, 2)
    before = png.read_bytes()
    x = ["explain", "--model", "open_clip:unbag-tiny@random", "--image", str(tmp_path / "a.png"), "--caption",
         "a red cube", "--out", str(png)]
    code, _, err = _run(x, capsys)
    assert code == 2 and "unbag did not write" in err and png.read_bytes() == before
    code, _, err = _run(x[:-1] + [str(tmp_path / "a.png"), "--overwrite"], capsys)
    assert code == 2 and "an input" in err


def test_eval_writes_its_pair_as_one_unit_with_the_items_hash(tmp_path, tiny, capsys, monkeypatch):
    import hashlib

    from unbag import utils
    sc = _sc(tmp_path / "sc")
    out = tmp_path / "r.json"
    args = ["eval", "--model", str(tiny), "--bench", f"sugarcrepe:{sc}", "--out", str(out), "--quiet"]
    assert _run(args, capsys)[0] == 0
    res = json.loads(out.read_text())
    items = (tmp_path / "r.items.jsonl").read_bytes()
    assert res["per_item_sha256"] == hashlib.sha256(items).hexdigest()
    before = (out.read_bytes(), items)
    real, calls = os.replace, []

    def failing(a, b):  # a full disk on the second rename: nothing may be half replaced
        calls.append(b)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(a, b)
    monkeypatch.setattr(utils.os, "replace", failing)
    code, _, err = _run(args + ["--seed", "1"], capsys)
    monkeypatch.setattr(utils.os, "replace", real)
    assert code == 2 and "No space left" in err
    assert not list(tmp_path.glob(".r.*tmp*"))
    assert (tmp_path / "r.items.jsonl").read_bytes() != before[1] or out.read_bytes() == before[0]


def test_concurrent_pair_writes_stay_pairs(tmp_path):
    import threading

    from unbag.utils import atomic_files
    a, b = tmp_path / "x.items.jsonl", tmp_path / "x.json"

    def write(k):
        for _ in range(30):
            atomic_files([(a, f"{k}\n" * 500), (b, f"{k}\n")])
    threads = [threading.Thread(target=write, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert a.read_text().split("\n")[0] == b.read_text().strip()
    assert not list(tmp_path.glob(".*tmp*"))


def test_sigterm_leaves_no_temporary_folder(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "unbag", "world", "build", "--out", str(tmp_path / "w"),
                             "--per-category", "5000", "--style", "flat", "--quiet"], stderr=subprocess.PIPE, text=True)
    import time
    deadline = time.time() + 120
    while not list(tmp_path.glob(".w.tmp-*/images/*.png")) and time.time() < deadline:  # at work
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 143 and "terminated" in err, (proc.returncode, err)
    assert os.listdir(tmp_path) == []


LOSES_ONE = """
import sys, time
import unbag.world.io as io
from unbag.utils import atomic_dir

def build(out, **kw):  # a library that swallows the first interruption (as a destructor would)
    with atomic_dir(out, "world build") as tmp:
        (tmp / "started").write_text("x")
        try:
            while True:
                time.sleep(0.01)
        except KeyboardInterrupt:
            pass
        while True:
            time.sleep(0.01)

io.build = build
from unbag.cli import main
sys.exit(main(["world", "build", "--out", sys.argv[1], "--quiet"]))
"""


def test_sigterm_is_asked_again_when_the_first_is_lost(tmp_path):
    import time
    proc = subprocess.Popen([sys.executable, "-c", LOSES_ONE, str(tmp_path / "w")], stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not list(tmp_path.glob(".w.tmp-*/started")) and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 143 and "terminated" in err, (proc.returncode, err)
    assert os.listdir(tmp_path) == []


def test_a_plans_out_with_a_tilde_is_the_home_folder(tmp_path, tiny, monkeypatch):
    from unbag.runner import run_plan
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    run_plan(_plan(tmp_path, tiny, _sc(tmp_path / "sc"), out="~/x"), progress=False)
    assert (tmp_path / "home" / "x" / "summary.json").is_file() and not (tmp_path / "~").exists()


# -- tracebacks that must be exit 2 with the file and field named ------------------------------

@pytest.mark.parametrize("out", ["folder", "/", ".", "full disk", "read-only"])
def test_eval_refuses_a_bad_out_before_scoring(out, tmp_path, tiny, monkeypatch, capsys, counted):
    from unbag import evaluation, utils
    scored = []
    monkeypatch.setattr(evaluation, "_evaluate", lambda *a, **k: scored.append(1))
    monkeypatch.chdir(tmp_path)
    if out == "read-only":  # sysfs: read-only even for root (chmod does not stop root)
        try:
            open("/sys/unbag-probe", "w").close()
            pytest.skip("/sys is writable here")
        except OSError:
            pass
    target = {"folder": str(tmp_path), "/": "/", ".": ".", "full disk": str(tmp_path / "r.json"),
              "read-only": "/sys/unbag-results.json"}[out]
    if out == "full disk":
        monkeypatch.setattr(utils.os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    code, _, err = _run(["eval", "--model", str(tiny), "--bench", f"sugarcrepe:{_sc(tmp_path / 'sc')}", "--out",
                         target, "--quiet"], capsys)
    assert code == 2 and "Traceback" not in err and not scored, err
    assert {"full disk": "No space left", "read-only": "not writable"}.get(out, "is a folder") in err


@pytest.mark.parametrize("what", ["json", "toml"])
def test_deeply_nested_files_are_errors(what, tmp_path, tiny, capsys):
    if what == "toml":
        p = tmp_path / "plan.toml"
        p.write_text("out = " + "[" * 200_000 + "]" * 200_000)
        args = ["run", str(p)]
        name = "plan.toml"
    else:
        root = _sc(tmp_path / "sc")
        (root / "data" / "swap_att.json").write_text("[" * 200_000 + "]" * 200_000)
        args = ["eval", "--model", str(tiny), "--bench", f"sugarcrepe:{root}"]
        name = "swap_att.json"
    code, _, err = _run(args + ["--quiet"], capsys)
    assert code == 2 and name in err and "nested too deeply" in err


@pytest.mark.parametrize("damage", ["binary", "truncated", "wrong type", "empty"])
def test_report_on_a_damaged_or_foreign_file_is_an_error(damage, tmp_path, tiny, capsys):
    r = tmp_path / "r.json"
    assert _run(["eval", "--model", str(tiny), "--bench", f"sugarcrepe:{_sc(tmp_path / 'sc')}", "--out", str(r),
                 "--quiet"], capsys)[0] == 0
    text = r.read_text()
    r.write_bytes({"binary": b"\x89PNG\r\n\x1a\n\xff\xfe", "truncated": text[: len(text) // 2].encode(),
                   "wrong type": json.dumps({"head": {"kind": "tflocal"}, "backbone": "x"}).encode(),
                   "empty": b""}[damage])
    code, _, err = _run(["report", str(r), "--out", str(tmp_path / "rep")], capsys)
    assert code == 2 and str(r) in err and "Traceback" not in err, err


def test_a_truncated_cell_or_summary_on_resume_is_not_a_traceback(tmp_path, tiny, counted, capsys):
    from unbag.runner import run_plan
    plan = _plan(tmp_path, tiny, _sc(tmp_path / "sc"))
    run_plan(plan, progress=False)
    cell = tmp_path / "out" / "results" / "tiny__sc__global.json"
    cell.write_text(cell.read_text()[:40])
    (tmp_path / "out" / "summary.json").write_text('{"cells": [')
    with pytest.warns(UserWarning, match="runs again"):
        run_plan(plan, progress=False)
    assert len(counted) == 2 and json.loads(cell.read_text())["metrics"]
    (tmp_path / "out" / "summary.json").write_text('{"cells": [')
    code, _, err = _run(["report", str(tmp_path / "out"), "--out", str(tmp_path / "rep")], capsys)
    assert code == 2 and "summary.json" in err and "Traceback" not in err


@pytest.mark.parametrize("argv, words", [
    (["world", "build", "--out", "{t}/w", "--size", "0"], "--size 0"),
    (["world", "build", "--out", "{t}/w", "--seed", "-1"], "--seed -1"),
    (["world", "pool", "--out", "{t}/w", "--size", "0"], "--size 0"),
    (["eval", "--bench", "ctrl-retrieval:0", "--out", "{t}/r.json"], "ctrl-retrieval:0"),
    (["eval", "--seed", "-1", "--bench", "ctrl-retrieval:8", "--out", "{t}/r.json"], "--seed -1"),
    (["eval", "--device", "meta", "--bench", "ctrl-retrieval:8", "--out", "{t}/r.json"], "--device meta"),
    (["features", "--data", "swaps", "--seed", "-1", "--out", "{t}/f"], "--seed -1"),
    (["negatives", "--k", "0", "--out", "{t}/n.json"], "--k 0"),
])
def test_bad_numbers_and_devices_are_errors(argv, words, tmp_path, capsys):
    code, _, err = _run([a.format(t=tmp_path) for a in argv] + ["--quiet"], capsys)
    assert code == 2 and words in err and "Traceback" not in err, err
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("damage, words", [("truncated", "not valid JSON"), ("unknown key", "head.colour"),
                                           ("no head", "field 'head'")])
def test_a_damaged_head_json_is_an_error_naming_it(damage, words, tmp_path, capsys):
    import shutil

    from unbag.heads.shipped import HEADS_DIR
    head = tmp_path / "head"
    shutil.copytree(HEADS_DIR / "tflocal" / "pretrained", head)
    rec = json.loads((head / "head.json").read_text())
    if damage == "truncated":
        (head / "head.json").write_text(json.dumps(rec)[:100])
    elif damage == "unknown key":
        rec["head"]["colour"] = "red"
        (head / "head.json").write_text(json.dumps(rec))
    else:
        del rec["head"]
        (head / "head.json").write_text(json.dumps(rec))
    code, _, err = _run(["eval", "--protocol", f"head:{head}", "--bench", "ctrl-retrieval:8", "--quiet"], capsys)
    assert code == 2 and "head.json" in err and words in err and "Traceback" not in err, err


# -- more cases, found by trying each command as a careless user or an attacker would -----------

def _files(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_world_show_refuses_a_folder_and_keeps_a_users_png(tmp_path, capsys):
    args = ["world", "show", "--n", "1", "--style", "flat", "--out"]
    code, _, err = _run(args + [str(tmp_path)], capsys)
    assert code == 2 and "is a folder" in err
    mine = _img(tmp_path / "mine.png")
    before = mine.read_bytes()
    code, _, err = _run(args + [str(mine)], capsys)
    assert code == 2 and "unbag did not write" in err and mine.read_bytes() == before
    assert _run(args + [str(tmp_path / "s.png")], capsys)[0] == 0 and _run(args + [str(tmp_path / "s.png")], capsys)[0] == 0


def test_an_image_path_with_a_nul_byte_names_the_item(tmp_path, tiny, capsys):
    root = _sc(tmp_path / "sc", ("0\0.jpg", "1.jpg"), image=False)
    _img(root / "val2017" / "1.jpg")
    code, _, err = _run(["eval", "--model", str(tiny), "--bench", f"sugarcrepe:{root}", "--quiet"], capsys)
    assert code == 2 and "item '0'" in err and "NUL" in err


def test_an_image_that_links_to_itself_names_the_item(tmp_path, tiny, capsys):
    root = _sc(tmp_path / "sc")
    (root / "val2017" / "0.jpg").unlink()
    (root / "val2017" / "0.jpg").symlink_to(root / "val2017" / "0.jpg")
    code, _, err = _run(["eval", "--model", str(tiny), "--bench", f"sugarcrepe:{root}", "--quiet"], capsys)
    assert code == 2 and "item '0'" in err and "Traceback" not in err, err


def test_report_never_replaces_the_folder_of_its_cells(tmp_path, tiny, capsys):
    from unbag.runner import run_plan
    run_plan(_plan(tmp_path, tiny, _sc(tmp_path / "sc")), progress=False)
    before = _files(tmp_path / "out" / "results")
    code, _, err = _run(["report", str(tmp_path / "out"), "--out", str(tmp_path / "out" / "results"), "--overwrite"],
                        capsys)
    assert code == 2 and "an input of this command" in err and _files(tmp_path / "out" / "results") == before


def test_a_plans_explain_ids_cannot_lead_out_of_its_folder(tmp_path, tiny, capsys):
    plan = _plan(tmp_path, tiny, _sc(tmp_path / "sc"), extra='explain = ["../../evil"]')
    code, _, err = _run(["run", str(plan), "--quiet"], capsys)
    assert code == 2 and "explain item '../../evil'" in err and not (tmp_path / "out").exists()


def test_report_refuses_an_out_that_is_a_link(tmp_path, tiny, capsys):
    r = tmp_path / "r.json"
    assert _run(["eval", "--model", str(tiny), "--bench", f"sugarcrepe:{_sc(tmp_path / 'sc')}", "--out", str(r),
                 "--quiet"], capsys)[0] == 0
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    code, _, err = _run(["report", str(r), "--out", str(tmp_path / "link")], capsys)
    assert code == 2 and "is a link" in err and (tmp_path / "link").is_symlink()
    assert not list(tmp_path.glob(".link*"))


@pytest.mark.parametrize("damage", ["open_clip_config.json", "overlay.json", "index.json"])
def test_a_truncated_model_or_cache_record_is_an_error_naming_it(damage, tmp_path, tiny, capsys):
    import shutil

    from unbag.models import METHODS_DIR
    if damage == "open_clip_config.json":
        shutil.copytree(tiny, tmp_path / "m")
        args = ["eval", "--model", str(tmp_path / "m"), "--bench", "ctrl-retrieval@flat:4"]
    elif damage == "overlay.json":
        shutil.copytree(METHODS_DIR / "ft", tmp_path / "m")
        args = ["eval", "--model", str(tmp_path / "m"), "--bench", "ctrl-retrieval@flat:4"]
    else:
        assert _run(["features", "--model", str(tiny), "--data", "swaps", "--n", "4", "--out", str(tmp_path / "m"),
                     "--quiet"], capsys)[0] == 0
        args = ["train", "--method", "tflocal", "--data", str(tmp_path / "m"), "--steps", "1", "--out",
                str(tmp_path / "h")]
    f = tmp_path / "m" / damage
    f.write_text(f.read_text()[:30])
    code, _, err = _run(args + ["--quiet"], capsys)
    assert code == 2 and damage in err and "not valid JSON" in err and "Traceback" not in err, err


def test_negatives_refuse_no_types(tmp_path, capsys):
    code, _, err = _run(["negatives", "--types", ",,", "--n", "2", "--out", str(tmp_path / "n.json"), "--quiet"], capsys)
    assert code == 2 and "--types" in err and os.listdir(tmp_path) == []


def test_an_out_name_too_long_is_refused_before_scoring(tmp_path, tiny, capsys, monkeypatch):
    from unbag import evaluation
    monkeypatch.setattr(evaluation, "_evaluate", lambda *a, **k: pytest.fail("scored"))
    code, _, err = _run(["eval", "--model", str(tiny), "--bench", f"sugarcrepe:{_sc(tmp_path / 'sc')}", "--out",
                         str(tmp_path / ("x" * 245 + ".json")), "--quiet"], capsys)
    assert code == 2 and "too long" in err


def test_export_and_features_never_replace_their_input(tmp_path, tiny, capsys):
    import shutil
    shutil.copytree(tiny, tmp_path / "m")
    (tmp_path / "m" / "README.txt").write_text("mine")
    code, _, err = _run(["export", str(tmp_path / "m"), "--out", str(tmp_path / "m"), "--overwrite"], capsys)
    assert code == 2 and "an input" in err and (tmp_path / "m" / "README.txt").read_text() == "mine"
    d = tmp_path / "d"
    _img(d / "a.png")
    (d / "caps.jsonl").write_text(json.dumps({"image": "a.png", "caption": "a red cube"}) + "\n")
    code, _, err = _run(["features", "--model", str(tiny), "--data", f"jsonl:{d / 'caps.jsonl'}", "--n", "1",
                         "--out", str(d), "--overwrite", "--quiet"], capsys)
    assert code == 2 and "an input" in err and (d / "caps.jsonl").is_file()


def test_report_escapes_names_and_keys(tmp_path, tiny, capsys):
    r = tmp_path / "r.json"
    assert _run(["eval", "--model", str(tiny), "--bench", f"sugarcrepe:{_sc(tmp_path / 'sc')}", "--out", str(r),
                 "--quiet"], capsys)[0] == 0
    data = json.loads(r.read_text())
    data["model"] = "<script>alert(1)</script>"
    data["metrics"]["<img src=x onerror=alert(1)>/acc"] = 0.5
    r.write_text(json.dumps(data))
    assert _run(["report", str(r), "--out", str(tmp_path / "rep"), "--title", "<b>t</b>"], capsys)[0] == 0
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "<script>alert" not in page and "<img src=x" not in page and "<b>t</b>" not in page


@pytest.mark.parametrize("text, words", [
    ("\x89PNG\x00\xff", "not a text file"),
    ('seed = -1\n', "field 'seed'"),
    ('seed = true\n', "field 'seed'"),
    ('out = ""\n', "runs in"),
    ('[models]\nm = 3\n', "models.m"),
    ('[train.t]\nmethod = "clip"\nstepz = 3\n', "train.t: unknown training options"),
])
def test_a_bad_plan_is_an_error_before_anything_is_written(text, words, tmp_path, tiny, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = tmp_path / "plan.toml"
    body = _plan(tmp_path, tiny, _sc(tmp_path / "sc")).read_text()
    if text.startswith("\x89"):  # a binary file
        p.write_bytes(text.encode("latin-1"))
    elif text.startswith("[models]"):  # one more model, not a spec
        p.write_text(body.replace("[models]\n", text))
    elif text.startswith("["):  # one more table
        p.write_text(body + text)
    else:  # a top-level field before the tables (in place of `out` when it is `out`)
        p.write_text(text + (body.split("\n", 1)[1] if text.startswith("out") else body))
    code, _, err = _run(["run", str(p), "--quiet"], capsys)
    assert code == 2 and words in err and "Traceback" not in err, err
    assert sorted(os.listdir(tmp_path)) == ["plan.toml", "sc"]


@pytest.mark.slow
def test_two_runs_of_one_plan_at_once_leave_whole_pairs(tmp_path, tiny):
    import hashlib
    plan = _plan(tmp_path, tiny, _sc(tmp_path / "sc"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    procs = [subprocess.Popen([sys.executable, "-m", "unbag", "run", str(plan), "--quiet"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0], [p.stderr.read() for p in procs]
    res = json.loads((tmp_path / "out" / "results" / "tiny__sc__global.json").read_text())
    items = (tmp_path / "out" / "results" / res["per_item"]).read_bytes()
    assert hashlib.sha256(items).hexdigest() == res["per_item_sha256"]


def test_a_summary_naming_a_file_out_of_the_run_is_refused(tmp_path, tiny, capsys):
    from unbag.runner import run_plan
    run_plan(_plan(tmp_path, tiny, _sc(tmp_path / "sc")), progress=False)
    r = tmp_path / "out" / "results" / "tiny__sc__global.json"
    (tmp_path / "elsewhere.json").write_bytes(r.read_bytes())
    s = tmp_path / "out" / "summary.json"
    data = json.loads(s.read_text())
    data["cells"][0]["file"] = "../elsewhere.json"
    s.write_text(json.dumps(data))
    code, _, err = _run(["report", str(tmp_path / "out"), "--out", str(tmp_path / "rep")], capsys)
    assert code == 2 and "leads out of" in err


def test_a_benchmark_file_with_a_byte_order_mark_is_read(tmp_path):
    from unbag import benchmarks
    root = _sc(tmp_path / "sc")
    f = root / "data" / "swap_att.json"
    f.write_bytes(b"\xef\xbb\xbf" + f.read_bytes())
    assert len(benchmarks.load(f"sugarcrepe:{root}").items) == 2


def test_a_results_file_with_a_key_twice_is_refused_by_report(tmp_path, tiny, capsys):
    r = tmp_path / "r.json"
    assert _run(["eval", "--model", str(tiny), "--bench", f"sugarcrepe:{_sc(tmp_path / 'sc')}", "--out", str(r),
                 "--quiet"], capsys)[0] == 0
    r.write_text(r.read_text().replace('"metrics": {', '"metrics": {"swap_att/acc": 1.0, ', 1))
    code, _, err = _run(["report", str(r), "--out", str(tmp_path / "rep")], capsys)
    assert code == 2 and "appears twice" in err and str(r) in err
