import json

import pytest
import torch

from unbag import evaluation as evaluate_mod
from unbag.cli import main
from unbag.errors import UnbagError
from unbag.heads.shipped import shipped_head
from unbag.runner import read_plan, run_plan


def _plan(tmp_path, bench):
    # a saved random model: `open_clip:unbag-tiny@random` draws new random weights at every load, and
    # a cell made with other weights than the spec's now is run again
    from unbag import models
    tiny = models.load("open_clip:unbag-tiny@random").save(tmp_path / "tiny")
    p = tmp_path / "plan.toml"
    p.write_text(f'''
out = "{tmp_path / 'out'}"
[models]
tiny = "{tiny}"
builtin = "builtin"
[benchmarks]
ctrl = "ctrl:{bench}"
retrieval = "ctrl-retrieval@flat:40"
[protocols]
global = "global"
sgi = "sgi"
''')
    return p


@pytest.mark.slow
def test_plan_runs_every_cell_and_resumes_after_an_interruption(tiny_bench, tmp_path, monkeypatch):
    plan = _plan(tmp_path, tiny_bench)
    real = evaluate_mod.evaluate
    calls = {"n": 0}

    def dying(*a, **kw):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(*a, **kw)
    monkeypatch.setattr(evaluate_mod, "evaluate", dying)
    with pytest.raises(KeyboardInterrupt):
        run_plan(plan, progress=False)
    done = sorted(p.name for p in (tmp_path / "out" / "results").glob("*.json"))
    assert len(done) == 2 and not list((tmp_path / "out" / "results").glob(".*tmp*"))

    calls["n"] = -100  # no more interruptions; count the evaluations of the rerun
    results = run_plan(plan, progress=False)
    assert calls["n"] == -100 + 4  # 6 cells (retrieval only with global), 2 finished before
    assert len(results) == 6
    cells = {(r["cell"]["model"], r["cell"]["benchmark"], r["cell"]["protocol"]) for r in results}
    assert ("builtin", "retrieval", "global") in cells and ("builtin", "retrieval", "sgi") not in cells
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert len(summary["cells"]) == 6
    assert (tmp_path / "out" / "plan.toml").read_text() == plan.read_text()

    # a finished cell whose recorded options differ from what the protocol records now runs again
    stale = tmp_path / "out" / "results" / "tiny__ctrl__sgi.json"
    rec = json.loads(stale.read_text())
    rec["config"]["options"]["phases"] = 1
    stale.write_text(json.dumps(rec))
    calls["n"] = 0
    run_plan(plan, progress=False)
    assert calls["n"] == 1 and json.loads(stale.read_text())["config"]["options"]["phases"] == 2

    # so does one made with other weights under the same spec (new shipped weights)
    other = tmp_path / "out" / "results" / "tiny__ctrl__global.json"
    rec = json.loads(other.read_text())
    rec["model_id"] = "0" * 40
    other.write_text(json.dumps(rec))
    calls["n"] = 0
    run_plan(plan, progress=False)
    assert calls["n"] == 1 and json.loads(other.read_text())["model_id"] != "0" * 40

    # and one scored on pixels the world no longer renders (a generated benchmark, older renderer)
    from unbag.world.render import RENDER_VERSION
    old = tmp_path / "out" / "results" / "tiny__retrieval__global.json"
    rec = json.loads(old.read_text())
    assert rec["benchmark"]["render"] == RENDER_VERSION
    rec["benchmark"]["render"] = RENDER_VERSION - 1
    old.write_text(json.dumps(rec))
    calls["n"] = 0
    run_plan(plan, progress=False)
    assert calls["n"] == 1 and json.loads(old.read_text())["benchmark"]["render"] == RENDER_VERSION

    # and one written before results held their intervals
    rec = json.loads(old.read_text())
    assert set(rec["intervals"]) == set(rec["metrics"])
    del rec["intervals"]
    old.write_text(json.dumps(rec))
    calls["n"] = 0
    run_plan(plan, progress=False)
    assert calls["n"] == 1 and set(json.loads(old.read_text())["intervals"]) == set(rec["metrics"])

    # under torchrun rank 0 alone checks and writes the folder: another rank that looked would take a
    # write of rank 0's half done (its temporary file) for a user's file, refuse, and leave rank 0
    # waiting in a collective it would never join
    from unbag import dist
    out = tmp_path / "out"
    (out / ".summary.json.tmp-half").write_text("")
    seen = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    monkeypatch.setattr(dist, "rank", lambda: 1)
    monkeypatch.setattr(dist, "barrier", lambda: None)
    calls["n"] = 0
    run_plan(plan, progress=False)
    assert calls["n"] == 0 and {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == seen
    monkeypatch.setattr(dist, "rank", lambda: 0)
    with pytest.raises(UnbagError, match="did not write"):
        run_plan(plan, progress=False)


def test_bad_plans_name_the_field(tmp_path):
    p = tmp_path / "p.toml"
    p.write_text("[models]\na = 'builtin'\n[protocols]\ng = 'global'\n")
    with pytest.raises(UnbagError, match="field 'benchmarks'"):
        read_plan(p)
    p.write_text("[models\n")
    with pytest.raises(UnbagError, match="not valid TOML"):
        read_plan(p)
    with pytest.raises(UnbagError, match="plan file not found"):
        read_plan(tmp_path / "nope.toml")
    p.write_text("[models]\na = 'builtin'\n[benchmarks]\nc = 'ctrl'\n[protocols]\n"
                 "s = { protocol = 'sgi:paper', models = ['b'] }\n")
    with pytest.raises(UnbagError, match=r"protocols.s.models: a list of the plan's model names \(a\)"):
        read_plan(p)
    for bad in ("0", "2.5", "'all'", "true"):
        p.write_text(f"per_category = {bad}\n[models]\na = 'builtin'\n[benchmarks]\nc = 'ctrl'\n[protocols]\ng = 'global'\n")
        with pytest.raises(UnbagError, match="field 'per_category' must be a whole number >= 1"):
            read_plan(p)


def test_a_plan_sets_the_generated_ctrls_items_and_a_changed_number_runs_again(tmp_path, monkeypatch):
    calls = {"n": 0}
    real = evaluate_mod.evaluate

    def counting(*a, **k):
        calls["n"] += 1
        return real(*a, **k)

    monkeypatch.setattr(evaluate_mod, "evaluate", counting)
    p = tmp_path / "plan.toml"
    out = tmp_path / "out"
    body = f'out = "{out}"\n[models]\nb = "builtin"\n[benchmarks]\nctrl = "ctrl@flat"\n' \
           'retrieval = "ctrl-retrieval@flat:20"\n[protocols]\nglobal = "global"\n'
    p.write_text("per_category = 2\n" + body)
    first = {r["benchmark"]["spec"]: r for r in run_plan(p, progress=False)}
    assert first["ctrl@flat"]["benchmark"]["per_category"] == 2 and first["ctrl@flat"]["n_items"] == 20
    assert calls["n"] == 2  # the retrieval set is no ctrl: its count is its own (:20)
    run_plan(p, progress=False)
    assert calls["n"] == 2  # the same plan again: every cell reused
    p.write_text("per_category = 3\n" + body)
    again = {r["benchmark"]["spec"]: r for r in run_plan(p, progress=False)}
    assert calls["n"] == 3 and again["ctrl@flat"]["benchmark"]["per_category"] == 3
    from unbag.benchmarks import ctrl
    monkeypatch.setattr(ctrl, "DEFAULT_PER_CATEGORY", 1)  # a small default: the cell is quick
    p.write_text(body)  # no per_category: the default's items, not the last run's 3
    last = {r["benchmark"]["spec"]: r for r in run_plan(p, progress=False)}
    assert calls["n"] == 4 and last["ctrl@flat"]["n_items"] == 10


@pytest.mark.slow
def test_a_protocol_can_be_limited_to_some_models(tiny_bench, tmp_path, monkeypatch):
    p = tmp_path / "plan.toml"
    p.write_text(f'''
out = "{tmp_path / 'out'}"
[models]
one = "builtin"
two = "builtin:clic"
[benchmarks]
ctrl = "ctrl:{tiny_bench}"
[protocols]
global = "global"
paper = {{ protocol = "sgi", models = ["two"], phases = 1 }}
''')
    seen = []
    real = evaluate_mod.evaluate
    monkeypatch.setattr(evaluate_mod, "evaluate",
                        lambda backend, bench, **kw: seen.append((backend.spec, kw["protocol"], kw["options"]))
                        or real(backend, bench, **kw))
    cells = [r["cell"] for r in run_plan(p, progress=False)]
    assert [(c["model"], c["protocol"]) for c in cells] == [("one", "global"), ("two", "global"), ("two", "paper")]
    assert seen[-1] == ("builtin:clic", "sgi", {"phases": 1})  # `models` is not an SGI option


def test_shipped_heads_resolve_per_model():
    assert shipped_head("sgi", "builtin") == "sgi"
    with pytest.raises(UnbagError, match="only for built-in models"):
        shipped_head("head:builtin:tflocal", "open_clip:ViT-B-32")
    assert shipped_head("head:builtin:tfregions", "builtin") == "head:builtin:tfregions@pretrained"
    assert shipped_head("head:builtin:tfregions", "builtin:ft") == "head:builtin:tfregions@ft"
    assert shipped_head("head:builtin:tfregions@ft", "builtin:ft") == "head:builtin:tfregions@ft"  # resolved once
    with pytest.raises(UnbagError, match="no shipped nosuch head for builtin:negclip"):
        shipped_head("head:builtin:nosuch", "builtin:negclip")


def test_unbag_eval_resolves_shipped_heads_as_plans_do(tiny_bench, tmp_path):
    from unbag.cli import main

    out = tmp_path / "r.json"
    assert main(["eval", "--model", "builtin:ft", "--bench", f"ctrl:{tiny_bench}", "--protocol",
                 "head:builtin:tfglobal", "--out", str(out), "--quiet"]) == 0
    res = json.loads(out.read_text())
    assert res["protocol"] == shipped_head("head:builtin:tfglobal", "builtin:ft")
    assert res["config"]["options"]["backbone"] == "builtin:ft"


def test_explanations_are_drawn_once_per_setup(tmp_path, monkeypatch):
    import json

    import unbag.sgi.explain
    from unbag.runner import write_explanations

    out = write_explanations(tmp_path, "builtin", "ctrl", ["ood-color-0000", "ood-count-0001"], 0, "sgi", {})
    index = json.loads((out / "index.json").read_text())
    assert [e["file"] for e in index] == ["ood-color-0000.png", "ood-count-0001.png"]
    assert all((out / e["file"]).stat().st_size > 1000 for e in index)
    real = unbag.sgi.explain.explain
    monkeypatch.setattr(unbag.sgi.explain, "explain", lambda *a, **k: pytest.fail("redrawn"))
    write_explanations(tmp_path, "builtin", "ctrl", ["ood-color-0000"], 0, "sgi", {})  # same setup: kept
    monkeypatch.setattr(unbag.sgi.explain, "explain", real)
    before = (out / "ood-color-0000.png").read_bytes()
    write_explanations(tmp_path, "builtin", "ctrl", ["ood-color-0000"], 0, "sgi", {"regions": "grid"})
    assert json.loads((out / "index.json").read_text())[0]["setup"]["options"]["regions"] == "grid"
    assert (out / "ood-color-0000.png").read_bytes() != before


@pytest.mark.slow
def test_a_plan_trains_a_head_on_caption_data_and_scores_with_it(tiny_bench, coco_captions, tmp_path):
    from unbag import models

    tiny = models.load("open_clip:unbag-tiny@random").save(tmp_path / "tiny")
    plan = tmp_path / "plan.toml"
    head = '[train.tfl]\nmethod = "tflocal"\nmodel = "tiny"\ndata = "' + coco_captions + '"\nn = 8\nsteps = {steps}\nbatch_size = 4\n'
    body = (f'out = "{tmp_path / "out"}"\n[models]\ntiny = "{tiny}"\n[benchmarks]\nctrl = "ctrl:{tiny_bench}"\n'
            '[protocols]\nglobal = "global"\nTFL = { protocol = "head:train.tfl", models = ["tiny"] }\n')
    plan.write_text(body + head.format(steps=2))
    got = run_plan(plan, progress=False)
    cells = {r["cell"]["protocol"]: r for r in got}
    assert set(cells) == {"global", "TFL"}
    assert cells["TFL"]["config"]["options"]["head"]["kind"] == "tflocal" and cells["TFL"]["recipe"] == "unbag"  # over phrases
    trained = tmp_path / "out" / "train" / "tfl"
    made = (trained / "head" / "head.json").stat().st_mtime_ns
    feats = (trained / "features" / "index.json").stat().st_mtime_ns
    run_plan(plan, progress=False)  # unchanged: the head and its cell are reused
    assert (trained / "head" / "head.json").stat().st_mtime_ns == made
    plan.write_text(body + head.format(steps=3))  # a head option changed: trained again, on the same features
    again = {r["cell"]["protocol"]: r for r in run_plan(plan, progress=False)}
    assert (trained / "head" / "head.json").stat().st_mtime_ns != made
    assert (trained / "features" / "index.json").stat().st_mtime_ns == feats
    assert again["TFL"]["config"]["options"]["head_id"] != cells["TFL"]["config"]["options"]["head_id"]


@pytest.mark.slow
def test_heads_on_the_same_features_share_one_extraction(tiny_bench, coco_captions, tmp_path, monkeypatch):
    from unbag import models
    from unbag.heads import extract as extract_mod

    calls = []
    real = extract_mod.extract
    monkeypatch.setattr(extract_mod, "extract", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    tiny = models.load("open_clip:unbag-tiny@random").save(tmp_path / "tiny")
    table = '[train.{name}]\nmethod = "{method}"\nmodel = "tiny"\ndata = "' + coco_captions + '"\nn = {n}\nsteps = 2\nbatch_size = 4\n'
    body = (f'out = "{tmp_path / "out"}"\n[models]\ntiny = "{tiny}"\n[benchmarks]\nctrl = "ctrl:{tiny_bench}"\n'
            '[protocols]\nA = { protocol = "head:train.a", models = ["tiny"] }\nB = { protocol = "head:train.b", models = ["tiny"] }\n')
    plan = tmp_path / "plan.toml"
    plan.write_text(body + table.format(name="a", method="tflocal", n=8) + table.format(name="b", method="tfglobal", n=8))
    got = {r["cell"]["protocol"]: r for r in run_plan(plan, progress=False)}
    assert calls == [tmp_path / "out" / "train" / "a" / "features"] and set(got) == {"A", "B"}
    head_b = json.loads((tmp_path / "out" / "train" / "b" / "head" / "head.json").read_text())
    assert head_b["cache"] == str(tmp_path / "out" / "train" / "a" / "features")
    plan.write_text(body + table.format(name="a", method="tflocal", n=8) + table.format(name="b", method="tfglobal", n=6))
    run_plan(plan, progress=False)  # b asks for other features now: its own extraction
    assert calls[1:] == [tmp_path / "out" / "train" / "b" / "features"]


def test_a_protocol_naming_no_trained_head_is_refused(tmp_path):
    p = tmp_path / "p.toml"
    p.write_text("[models]\na = 'builtin'\n[benchmarks]\nc = 'ctrl'\n[protocols]\nh = 'head:train.nope'\n")
    with pytest.raises(UnbagError, match="protocols.h: 'head:train.nope' names no head"):
        run_plan(p, progress=False)
    p.write_text("[models]\na = 'builtin'\n[benchmarks]\nc = 'ctrl'\n[protocols]\ng = 'global'\n"
                 "[train.t]\nmethod = 'tflocal'\nmodel = 'builtin'\n")
    with pytest.raises(UnbagError, match="train.t: field 'data'"):
        run_plan(p, progress=False)


@pytest.mark.parametrize("table, said", [
    ('method = "tflocal"\nmodel = "builtin"\ndata = "world"\nbatch_size = 1\n', "--batch-size 1: a head draws"),
    ('method = "tflocal"\nmodel = "builtin"\ndata = "world"\nbatch_size = 2\n', "--batch-size 2: a head draws"),
    ('method = "tflocal"\nmodel = "builtin"\ndata = "world"\nn = "many"\n', "--n 'many': must be a whole number"),
    ('method = "tflocal"\nmodel = "builtin"\ndata = "world"\nsteps = 0\n', "--steps 0: must be a whole number >= 1"),
    ('method = "tflocal"\nmodel = "builtin"\ndata = "world"\nlr = nan\n', "--lr nan: must be a finite number > 0"),
    ('method = "ft"\nmodel = "builtin"\ndata = "world"\nlr = -1.0\n', "--lr -1.0: must be a finite number > 0"),
    ('method = "ft"\nmodel = "builtin"\ndata = "world"\nweight_decay = inf\n', "--weight-decay inf"),
    ('method = "ft"\nmodel = "builtin"\ndata = "world"\ndevice = "cuda"\n' if not torch.cuda.is_available() else
     'method = "ft"\nmodel = "builtin"\ndata = "world"\ndevice = "cuda:99"\n', "--device cuda"),
])
def test_a_train_table_that_cannot_train_is_refused_before_anything_is_written(tmp_path, capsys, table, said):
    plan = tmp_path / "plan.toml"
    plan.write_text(f'out = "{tmp_path / "out"}"\n[models]\nm = "builtin"\n[benchmarks]\nc = "ctrl"\n'
                    f'[protocols]\ng = "global"\n[train.X]\n{table}')
    assert main(["run", str(plan), "--quiet"]) == 2
    assert f"train.X: {said}" in capsys.readouterr().err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("metric, ok", [("ood/all/group", True), ("ood/color/group", True), ("ood/all/nosuch", False),
                                        ("macro/acc", True), ("bogus", False)])
def test_a_published_row_must_name_a_metric_the_benchmark_reports(tmp_path, metric, ok):
    plan = tmp_path / "plan.toml"
    plan.write_text('[models]\nm = "builtin"\n[benchmarks]\nctrl = "ctrl"\n[protocols]\ng = "global"\n'
                    f'[published]\nsource = "a paper"\n[published.ctrl]\nmetric = "{metric}"\n"m g" = 0.5\n')
    if ok:
        assert read_plan(plan)["published"]["ctrl"]["metric"] == metric
    else:
        with pytest.raises(UnbagError, match=f"published.ctrl: metric '{metric}' is not a metric ctrl reports"):
            read_plan(plan)


def test_rewritten_training_captions_train_again_and_rescore(tiny_bench, coco_captions, tmp_path):
    from unbag import models

    tiny = models.load("open_clip:unbag-tiny@random").save(tmp_path / "tiny")
    plan = tmp_path / "plan.toml"
    plan.write_text(f'out = "{tmp_path / "out"}"\n[models]\ntiny = "{tiny}"\n[benchmarks]\nctrl = "ctrl:{tiny_bench}"\n'
                    '[protocols]\nglobal = "global"\nTFL = { protocol = "head:train.tfl", models = ["tiny"] }\n'
                    f'[train.FT]\nmethod = "ft"\nmodel = "{tiny}"\ndata = "{coco_captions}"\nsteps = 2\nbatch_size = 4\n'
                    f'warmup = 0\n[train.tfl]\nmethod = "tflocal"\nmodel = "tiny"\ndata = "{coco_captions}"\nn = 8\n'
                    'steps = 2\nbatch_size = 4\n')
    first = {(r["cell"]["model"], r["cell"]["protocol"]): r for r in run_plan(plan, progress=False)}
    times = lambda: {f.name: f.stat().st_mtime_ns for f in (tmp_path / "out" / "results").glob("*.json")}  # noqa: E731
    before = times()
    run_plan(plan, progress=False)
    assert times() == before  # nothing changed: every cell reused
    ann = coco_captions.removeprefix("coco:").split(":")[0]
    data = json.loads(open(ann).read())
    for a in data["annotations"]:
        a["caption"] = "a blue circle on white " + a["caption"]
    with open(ann, "w") as f:
        json.dump(data, f)
    third = {(r["cell"]["model"], r["cell"]["protocol"]): r for r in run_plan(plan, progress=False)}
    assert third[("FT", "global")]["model_id"] != first[("FT", "global")]["model_id"]  # trained again
    assert third[("tiny", "TFL")]["config"]["options"]["head_id"] != first[("tiny", "TFL")]["config"]["options"]["head_id"]
    after = times()
    frozen = next(n for n in before if n.startswith("tiny") and "global" in n)
    assert after[frozen] == before[frozen] and sum(after[n] != before[n] for n in before) == 2  # FT's and TFL's cells


SC_PLAN = '[models]\nm = "builtin"\n[benchmarks]\nc = "ctrl"\n[protocols]\ng = "global"\n'


@pytest.mark.parametrize("text, said", [  # an attacker's or a careless user's plans that train
    ('[train."../x"]\nmethod = "ft"\nmodel = "builtin"\ndata = "world"\n', "name '../x' may only use letters"),
    ('[train.X]\nmethod = "ft"\nmodel = "builtin"\ndata = "world"\nsteps = 1e9\n', "--steps 1000000000.0"),
    ('[train.X]\nmethod = "ft"\nmodel = "builtin"\ndata = "world"\nbatch_size = true\n', "--batch-size True"),
    ('[train.X]\nmethod = "ft"\nmodel = "builtin"\ndata = "world"\nema = 1.5\n', "--ema 1.5: must be a finite number"),
    ('[train.m]\nmethod = "ft"\nmodel = "builtin"\ndata = "world"\n', "'m' names both a [models] entry and a [train.m]"),
    ('[train.H]\nmethod = "tflocal"\nmodel = "m"\ndata = "csv:/no/such.csv"\n', "/no/such.csv: training data file not found"),
    ('[train.X]\nmethod = "ft"\nmodel = "builtin"\ndata = "coco:/no/ann.json"\n', "/no/ann.json: training data file not"),
])
def test_plans_that_train_badly_are_refused_before_anything_is_written(tmp_path, capsys, text, said):
    plan = tmp_path / "plan.toml"
    plan.write_text(f'out = "{tmp_path / "out"}"\n' + SC_PLAN + text)
    assert main(["run", str(plan), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("head, said", [
    ("seed = -1\n", "field 'seed' must be a whole number >= 0"), ("per_category = 0\n", "'per_category' must be"),
    ('out = ""\n', "a folder this command runs in"),
])
def test_plan_fields_out_of_range_are_refused(tmp_path, capsys, monkeypatch, head, said):
    monkeypatch.chdir(tmp_path)
    plan = tmp_path / "plan.toml"
    plan.write_text(head + SC_PLAN)
    assert main(["run", str(plan), "--quiet"]) == 2
    assert said in capsys.readouterr().err and sorted(p.name for p in tmp_path.iterdir()) == ["plan.toml"]


def test_a_plan_file_that_is_a_fifo_is_refused_not_waited_on(tmp_path, capsys):
    import os
    os.mkfifo(tmp_path / "plan.toml")
    assert main(["run", str(tmp_path / "plan.toml"), "--quiet"]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_a_head_protocol_naming_a_trained_model_is_refused(tmp_path, capsys):
    plan = tmp_path / "plan.toml"
    plan.write_text(f'out = "{tmp_path / "out"}"\n[models]\nm = "builtin"\n[benchmarks]\nc = "ctrl"\n[protocols]\n'
                    'h = "head:train.X"\n[train.X]\nmethod = "ft"\nmodel = "builtin"\ndata = "world"\n')
    assert main(["run", str(plan), "--quiet"]) == 2
    assert "'head:train.X' names no head of the plan's [train.NAME] tables" in capsys.readouterr().err


def test_shipped_heads_are_recorded_by_name_and_a_moved_checkout_reuses_their_cells(tiny_bench, tmp_path, monkeypatch):
    import shutil

    import unbag.heads.shipped as shipped

    plan = tmp_path / "plan.toml"
    plan.write_text(f'out = "{tmp_path / "out"}"\n[models]\nm = "builtin"\n[benchmarks]\nc = "ctrl:{tiny_bench}"\n'
                    '[protocols]\nh = "head:builtin:tfglobal"\n')
    res = run_plan(plan, progress=False)[0]
    assert res["protocol"] == "head:builtin:tfglobal@pretrained"
    text = next((tmp_path / "out" / "results").glob("*.json")).read_text()
    assert str(shipped.HEADS_DIR) not in text and str(shipped.HEADS_DIR.parent) not in text
    made = {f: f.stat().st_mtime_ns for f in (tmp_path / "out" / "results").glob("*")}
    moved = tmp_path / "elsewhere" / "heads"
    shutil.copytree(shipped.HEADS_DIR, moved)  # the same heads in another checkout
    monkeypatch.setattr(shipped, "HEADS_DIR", moved)
    again = run_plan(plan, progress=False)[0]
    assert again["created"] == res["created"] and {f: f.stat().st_mtime_ns for f in made} == made
