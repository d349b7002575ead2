"""`unbag suite`: the benchmarks found under a root scored as one plan, the absent ones named,
one table whose scores and average are recomputed here from the results files."""
import json
import re
import shutil

import pytest

from unbag import benchmarks
from unbag.cli import main
from unbag.reports.table import suite_table
from unbag.suite_root import find, plan_text

PRESENT = ("aro", "winoground", "naturalbench", "crepe", "cola")


@pytest.fixture(scope="module")
def suite_root(aro_dir, winoground_dir, naturalbench_dir, crepe_dir, cola_dir, tmp_path_factory):
    """Five of the suite's eighteen: ARO (four benchmarks in one folder), COLA with its images
    elsewhere, named by suite.toml."""
    root = tmp_path_factory.mktemp("suite")
    for name, src in zip(PRESENT, (aro_dir, winoground_dir, naturalbench_dir, crepe_dir, cola_dir)):
        shutil.copytree(src, root / name)
    shutil.move(root / "cola" / "images", root / "pictures")
    (root / "suite.toml").write_text('[suite]\ncola = "pictures"\n')
    return root


def _results(out):
    return [json.loads(f.read_text()) for f in sorted((out / "results").glob("*.json"))]


@pytest.mark.slow
def test_suite_scores_what_it_finds_and_names_the_rest(suite_root, tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["suite", "--model", "builtin", "--root", str(suite_root), "--out", str(out), "--quiet"])
    said, err = capsys.readouterr()
    assert code == 0
    assert "warning: crepe:" in err and "COLA_singleobjects_benchmark_PACO.json" in err  # missing on purpose
    found, missing = find(suite_root)
    assert set(missing) == set(benchmarks.suite_folders()) - set(PRESENT) and len(missing) == 13
    assert found["cola"] == f"cola:{suite_root / 'cola'}:{suite_root / 'pictures'}"
    for folder in missing:
        assert f"not found: {suite_root / folder}/" in said
    assert "github.com/RAIVNLab/sugar-crepe" in said and "docs/benchmarks.md#vismin" in said
    res = _results(out)
    assert {r["benchmark"]["name"] for r in res} == {*benchmarks.suite_folders()["aro"], "winoground",
                                                      "naturalbench", "crepe", "cola"}
    # each benchmark's score: its declared suite score; ARO's the mean of its four; the average theirs
    score = {r["benchmark"]["name"]: benchmarks.summary(r["benchmark"]["name"]).suite_score(r["metrics"]) for r in res}
    per = {"aro": sum(score[n] for n in benchmarks.suite_folders()["aro"]) / 4,
           **{n: score[n] for n in PRESENT if n != "aro"}}
    assert score["cola"] == pytest.approx((next(r for r in res if r["benchmark"]["name"] == "cola")["metrics"]
                                           ["multiobj/image"] + next(r for r in res if r["benchmark"]["name"] == "cola")
                                           ["metrics"]["macro/mAP_official"]) / 2)
    head, rows, note = suite_table([("m", "global", r, None) for r in res])
    table = {row[0]: row[2][0] for row in rows}
    for name, v in per.items():
        assert table[name] == pytest.approx(v)
    assert table["suite average"] == pytest.approx(sum(per.values()) / 5)
    assert "5 of the suite's 18" in note and "not comparable" in note and "vismin" in note
    assert "suite average" in said and "not comparable" in said.replace("\n", " ")
    report = (out / "report" / "report.md").read_text()
    assert "## The compositionality suite (%)" in report and "## cola" in report
    # one table in 120 columns; each benchmark's own columns with --detail, in blocks that fit too
    tables = [line for line in said.splitlines() if str(tmp_path) not in line and str(suite_root) not in line]  # paths unbroken
    assert max(map(len, tables)) <= 120 and "crepe (crepe:" not in said and "--detail" in said
    assert main(["suite", "--model", "builtin", "--root", str(suite_root), "--out", str(out), "--quiet", "--detail"]) == 0
    detail = capsys.readouterr().out
    assert max(len(line) for line in detail.splitlines() if str(tmp_path) not in line and str(suite_root) not in line) <= 120
    for name in ("crepe", "cola", "winoground", "naturalbench", "aro-vgr"):  # each one's own table
        assert re.search(rf"^\s*{re.escape(name)}: %", detail, re.M), name


@pytest.mark.slow
def test_a_second_run_reuses_every_cell(suite_root, tmp_path, capsys):
    out = tmp_path / "run"
    args = ["suite", "--model", "builtin", "--root", str(suite_root), "--out", str(out), "--quiet"]
    assert main(args) == 0
    stamps = {f.name: f.stat().st_mtime_ns for f in (out / "results").iterdir()}
    assert main(args) == 0
    assert {f.name: f.stat().st_mtime_ns for f in (out / "results").iterdir()} == stamps
    plan = (out / "plan.toml").read_text()
    assert '"builtin" = "builtin"' in plan and f'"winoground" = "winoground:{suite_root / "winoground"}"' in plan


@pytest.mark.slow
def test_suite_takes_several_protocols(suite_root, tmp_path, capsys):
    root = tmp_path / "root"
    shutil.copytree(suite_root / "winoground", root / "winoground")
    out = tmp_path / "run"
    assert main(["suite", "--model", "builtin", "--root", str(root), "--out", str(out), "--protocol", "global", "--protocol", "sgi",
                 "--quiet"]) == 0
    said = capsys.readouterr().out
    assert {r["protocol"] for r in _results(out)} == {"global", "sgi"}
    head = next(line for line in said.splitlines() if line.startswith("benchmark"))
    assert "score % (2 protocols), builtin" in said and "global" in head and "sgi" in head and "17 are missing" not in said


def test_a_protocol_that_cannot_apply_says_so_in_its_cell():
    res = {"benchmark": {"name": "winoground"}, "metrics": {"all/group": 0.5}}
    head, rows, _ = suite_table([("m", "global", res, None)], (("winoground", "global", "global protocol only"),))
    assert rows[0][2][0] == 0.5
    res2 = {"benchmark": {"name": "naturalbench"}, "metrics": {"all/group": 0.25}}
    head, rows, _ = suite_table([("m", "global", res, None), ("m", "sgi", res2, None)],
                                (("winoground", "sgi", "global protocol only"),))
    assert head[2:] == ["m · global", "m · sgi"]
    wino = next(r for r in rows if r[0] == "winoground")
    assert wino[3] == ("n/a: global protocol only", None, None)
    assert next(r for r in rows if r[0] == "suite average")[3][0] == 0.25  # the average of what it has


@pytest.mark.parametrize("toml, said", [
    ('[suite]\nnope = "x"\n', "suite.nope: not a benchmark of the suite"),
    ('[suite]\nwinoground = "x"\n', "suite.winoground: winoground reads its images from its own folder"),
    ('[suite]\ncrepe = 3\n', "suite.crepe: a path string (no NUL byte), got 3"),
    ('crepe = "x"\n', "expected one [suite] table"),
    ('[suite]\ncrepe = "a\\u0000b"\n', "suite.crepe: a path string (no NUL byte)"),
])
def test_a_bad_suite_file_is_refused_by_name(toml, said, tmp_path, capsys):
    root = tmp_path / "root"
    (root / "winoground").mkdir(parents=True)
    (root / "suite.toml").write_text(toml)
    assert main(["suite", "--model", "builtin", "--root", str(root), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert str(root / "suite.toml") in err and said in err
    assert not (tmp_path / "out").exists()


def test_a_suite_file_that_is_a_folder_is_refused_not_ignored(tmp_path, capsys):
    root = tmp_path / "root"
    (root / "winoground").mkdir(parents=True)
    (root / "suite.toml").mkdir()
    assert main(["suite", "--model", "builtin", "--root", str(root), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    assert "suite.toml: is a folder, not a file" in capsys.readouterr().err


def test_a_benchmark_there_but_not_a_folder_is_named_for_what_it_is(tmp_path):
    from unbag.suite_root import absent
    (tmp_path / "whatsup").write_text("")
    (tmp_path / "colorswap.zip").write_bytes(b"PK")
    (tmp_path / "crepe").symlink_to(tmp_path / "gone")
    assert absent(tmp_path, "whatsup") == f"{tmp_path / 'whatsup'} is there but is not a folder"
    assert absent(tmp_path, "colorswap") == f"{tmp_path / 'colorswap.zip'} is there, still packed: unpack it as " \
                                            f"{tmp_path / 'colorswap'}/"
    assert absent(tmp_path, "crepe").startswith(f"{tmp_path / 'crepe'} is a link to nothing")
    assert absent(tmp_path, "spec") == f"not found: {tmp_path / 'spec'}/"


def test_a_root_without_any_benchmark_is_an_error(tmp_path, capsys):
    assert main(["suite", "--model", "builtin", "--root", str(tmp_path), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    assert "none of the suite's benchmarks found" in capsys.readouterr().err


def test_the_plan_names_are_plan_names():
    text = plan_text("open_clip:ViT-B-32-quickgelu@openai", {"crepe": "crepe:/d/crepe"}, ["global", "head:builtin:tflocal"])
    assert '"open_clip-ViT-B-32-quickgelu-openai" = "open_clip:ViT-B-32-quickgelu@openai"' in text
    assert '"head-builtin-tflocal" = "head:builtin:tflocal"' in text


@pytest.mark.parametrize("args, said", [(["--protocol", "bogus"], "bogus"), (["--precision", "fp64"], "fp64"),
                                        (["--model", "/no/such/model"], "/no/such/model")])
def test_a_bad_input_writes_nothing(winoground_dir, tmp_path, capsys, args, said):
    root = tmp_path / "root"
    shutil.copytree(winoground_dir, root / "winoground")
    out = tmp_path / "run"
    base = {"--model": "builtin"}
    for k, v in zip(args[::2], args[1::2]):
        base[k] = v
    code = main(["suite", "--model", "builtin", "--root", str(root), "--out", str(out), "--quiet", *[x for kv in base.items() for x in kv]])
    assert code == 2 and said in capsys.readouterr().err
    assert not out.exists()


def test_an_out_inside_a_benchmark_folder_is_refused_and_nothing_written_there(winoground_dir, tmp_path, capsys):
    root = tmp_path / "root"
    shutil.copytree(winoground_dir, root / "winoground")
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    code = main(["suite", "--model", "builtin", "--root", str(root), "--out", str(root / "winoground" / "run"),
                 "--quiet"])
    assert code == 2 and "lies inside" in capsys.readouterr().err
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


def test_a_plan_with_an_unreadable_benchmark_writes_nothing(winoground_dir, cola_dir, tmp_path, capsys):
    cola = tmp_path / "cola"
    shutil.copytree(cola_dir, cola)
    shutil.rmtree(cola / "images")  # no item to score
    plan = tmp_path / "plan.toml"
    plan.write_text(f'out = "{tmp_path / "run"}"\n[models]\nm = "builtin"\n[benchmarks]\n'
                    f'w = "winoground:{winoground_dir}"\nc = "cola:{cola}"\n[protocols]\nglobal = "global"\n')
    assert main(["run", str(plan), "--quiet"]) == 2
    assert "benchmarks.c: cola:" in capsys.readouterr().err and not (tmp_path / "run").exists()


@pytest.fixture
def sc_root(sugarcrepe_dir, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(sugarcrepe_dir, root / "sugarcrepe")
    return root


@pytest.mark.parametrize("how, said", [
    ("missing image root", "suite.sugarcrepe: /no/such/images is not found"),
    ("file image root", "is not a folder (an image root is the folder"),
    ("every image gone", "no benchmark could be read, nothing written: sugarcrepe: "),
    ("root is a file", "suite root not found"),
    ("out is the root", "holds files unbag did not write"),
    ("out is a file", "is a file; --out names the folder"),
])
def test_suite_roots_a_careless_user_gives_are_refused_and_nothing_written(sc_root, tmp_path, capsys, how, said):
    out, root = tmp_path / "out", sc_root
    if how == "missing image root":
        (root / "suite.toml").write_text('[suite]\nsugarcrepe = "/no/such/images"\n')
    elif how == "file image root":
        (tmp_path / "afile").write_text("x")
        (root / "suite.toml").write_text(f'[suite]\nsugarcrepe = "{tmp_path / "afile"}"\n')
    elif how == "every image gone":
        shutil.rmtree(root / "sugarcrepe" / "val2017")
    elif how == "root is a file":
        root = tmp_path / "afile"
        root.write_text("x")
    elif how == "out is the root":
        out = root
    else:
        out = tmp_path / "afile"
        out.write_text("x")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert main(["suite", "--model", "builtin", "--root", str(root), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_a_suite_root_whose_path_holds_a_colon_is_named(sugarcrepe_dir, tmp_path, capsys):
    shutil.copytree(sugarcrepe_dir, tmp_path / "a:b" / "sugarcrepe")
    assert main(["suite", "--model", "builtin", "--root", str(tmp_path / "a:b"), "--out", str(tmp_path / "o"),
                 "--quiet"]) == 2
    assert "a benchmark folder whose path holds ':' cannot be named in a spec" in capsys.readouterr().err
