import json
import shutil

import pytest

from unbag.cli import main


def _run(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_eval_writes_results_and_per_item_files(tiny_bench, tmp_path, capsys):
    out = tmp_path / "res" / "results.json"
    code, stdout, _ = _run(["eval", "--model", "open_clip:unbag-tiny@random", "--bench", f"ctrl:{tiny_bench}",
                            "--out", str(out), "--quiet"], capsys)
    assert code == 0 and "OOD group" in stdout
    res = json.loads(out.read_text())
    assert res["n_items"] == 30 and res["protocol"] == "global" and res["model"] == "open_clip:unbag-tiny@random"
    for key in ("id/color/group", "ood/all/text", "all/all/image", "ood/count/pair"):
        assert 0.0 <= res["metrics"][key] <= 1.0
    assert set(res["versions"]) >= {"unbag", "torch", "open_clip", "git_commit"}
    assert res["benchmark"]["seed"] == 3 and "score_s" in res["timings"]
    items = [json.loads(x) for x in (out.parent / res["per_item"]).read_text().splitlines()]
    assert len(items) == 30 and len(items[0]["scores"]) == 2
    assert sum(it["group"] for it in items if it["split"] == "id") / 15 == pytest.approx(res["metrics"]["id/all/group"])


@pytest.mark.slow
def test_world_build_and_show(tmp_path, capsys):
    code, _, _ = _run(["world", "build", "--out", str(tmp_path / "w"), "--per-category", "1",
                       "--size", "32", "--quiet"], capsys)
    assert code == 0 and (tmp_path / "w" / "items.jsonl").is_file()
    code, _, _ = _run(["world", "show", "--bench", f"ctrl:{tmp_path / 'w'}", "--out", str(tmp_path / "s.png")], capsys)
    from PIL import Image
    assert code == 0 and Image.open(tmp_path / "s.png").size[0] > 500


def test_train_cli(tmp_path, capsys):
    code, stdout, _ = _run(["train", "--method", "clip", "--steps", "2", "--batch-size", "4", "--workers", "0", "--out",
                            str(tmp_path / "t"), "--quiet"], capsys)
    assert code == 0 and (tmp_path / "t" / "model" / "open_clip_config.json").is_file()


def test_train_cli_passes_zero_values_on(monkeypatch, tmp_path):
    import unbag.api

    got = {}
    monkeypatch.setattr(unbag.api, "train", lambda *a, **kw: got.update(kw) or tmp_path)
    main(["train", "--method", "clip", "--warmup", "0", "--weight-decay", "0", "--layers", "0", "--out", str(tmp_path / "t")])
    assert got["warmup"] == 0 and got["weight_decay"] == 0.0 and got["layers"] == 0
    assert "compile" not in got and "ema" not in got  # flags not given keep the method's defaults


# -- bad input: a clear message naming file/line/field, exit code 2, nothing written --------

def _corrupt(tiny_bench, tmp_path, edit):
    root = tmp_path / "bad"
    shutil.copytree(tiny_bench, root)
    lines = (root / "items.jsonl").read_text().splitlines()
    edit(root, lines)
    (root / "items.jsonl").write_text("\n".join(lines) + "\n")
    return root


def _set(line, **kw):
    rec = json.loads(line)
    rec.update(kw)
    return json.dumps(rec)


CASES = {
    "malformed JSONL": (lambda r, ls: ls.__setitem__(4, ls[4][:-5]), r"items.jsonl:5: not valid JSON"),
    "unknown category": (lambda r, ls: ls.__setitem__(2, _set(ls[2], category="shape")),
                         r"items.jsonl:3: field 'category': unknown category 'shape'"),
    "missing field": (lambda r, ls: ls.__setitem__(0, _set(ls[0], captions=["only one"])),
                      r"items.jsonl:1: field 'captions' should be a list of 2"),
    "missing image": (lambda r, ls: (r / json.loads(ls[6])["images"][1]).unlink(),
                      r"items.jsonl:7: field 'images\[1\]': image file not found"),
    "corrupt image": (lambda r, ls: (r / json.loads(ls[7])["images"][0]).write_bytes(b"\x89PNG\r\n garbage"),
                      r"items.jsonl:8: field 'images\[0\]': cannot read image"),
    "mismatched image size": (lambda r, ls: __import__("PIL.Image").Image.new("RGB", (40, 64)).save(
        r / json.loads(ls[9])["images"][1]), r"items.jsonl:10: field 'images\[1\]': image .* is 40x64, the benchmark says 64x64"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input(case, tiny_bench, tmp_path, capsys):
    edit, message = CASES[case]
    root = _corrupt(tiny_bench, tmp_path, edit)
    out = tmp_path / "out" / "results.json"
    code, _, err = _run(["eval", "--model", "open_clip:unbag-tiny@random", "--bench", f"ctrl:{root}",
                         "--out", str(out), "--quiet"], capsys)
    assert code == 2
    import re
    assert re.search(message, err), err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_unknown_model_spec(tiny_bench, capsys):
    code, _, err = _run(["eval", "--model", "clip-b32", "--bench", f"ctrl:{tiny_bench}", "--quiet"], capsys)
    assert code == 2 and "unknown model spec 'clip-b32'" in err


@pytest.mark.slow
def test_unknown_benchmark_and_protocol(capsys):
    assert _run(["eval", "--bench", "sugarcrepe2", "--quiet"], capsys)[0] == 2
    code, _, err = _run(["eval", "--protocol", "sgx", "--quiet"], capsys)
    assert code == 2 and "unknown protocol 'sgx'" in err


def test_eval_sgi_records_its_options(tiny_bench, tmp_path, capsys):
    out = tmp_path / "sgi.json"
    code, stdout, _ = _run(["eval", "--model", "open_clip:unbag-tiny@random", "--bench", f"ctrl:{tiny_bench}",
                            "--protocol", "sgi", "--regions", "gt+groups", "--assign", "hungarian",
                            "--out", str(out), "--quiet"], capsys)
    assert code == 0
    res = json.loads(out.read_text())
    opts = res["config"]["options"]
    assert res["protocol"] == "sgi" and opts["regions"] == "gt+groups" and opts["assign"] == "hungarian"
    assert opts["mode"] == "mask" and opts["match"] == "kind"


def test_explain_writes_a_picture_and_a_table(tmp_path, capsys):
    from PIL import Image

    out = tmp_path / "ex.png"
    code, stdout, _ = _run(["explain", "--model", "open_clip:unbag-tiny@random", "--item", "ood-relation-0002",
                            "--out", str(out)], capsys)
    assert code == 0 and "SGI score" in stdout and "relation" in stdout
    assert Image.open(out).size[0] >= 2 * 256
    img = tmp_path / "in.png"
    Image.new("RGB", (64, 64), (118, 118, 118)).save(img)
    code, stdout, _ = _run(["explain", "--model", "open_clip:unbag-tiny@random", "--image", str(img),
                            "--caption", "a red cube to the left of a blue sphere", "--out", str(out)], capsys)
    assert code == 0 and "a red cube" in stdout
    code, _, err = _run(["explain", "--model", "open_clip:unbag-tiny@random", "--item", "ood-colour-1"], capsys)
    assert code == 2 and "bad item id" in err


def test_negatives_cli_and_bad_types(tmp_path, capsys):
    out = tmp_path / "neg.json"
    code, stdout, _ = _run(["negatives", "--n", "3", "--k", "2", "--types", "replace_nouns,swap_adjectives",
                            "--out", str(out), "--quiet"], capsys)
    assert code == 0 and "negatives written" in stdout
    entries = json.loads(out.read_text())
    assert len(entries) == 3 and all(set(e["types"]) <= {"replace_nouns", "swap_adjectives"} for e in entries)
    code, _, err = _run(["negatives", "--types", "paraphrase", "--out", str(out), "--quiet"], capsys)
    assert code == 2 and "unknown negative types ['paraphrase']" in err


@pytest.mark.slow
def test_retrieval_eval_is_global_only(tmp_path, capsys):
    out = tmp_path / "r.json"
    code, stdout, _ = _run(["eval", "--model", "builtin", "--bench", "ctrl-retrieval:40", "--out", str(out),
                            "--quiet"], capsys)
    res = json.loads(out.read_text())
    assert code == 0 and 0 < res["metrics"]["all/retrieval/i2t/R@1"] <= res["metrics"]["all/retrieval/i2t/R@5"]
    code, _, err = _run(["eval", "--bench", "ctrl-retrieval:50", "--protocol", "sgi", "--quiet"], capsys)
    assert code == 2 and "global protocol only" in err


@pytest.mark.parametrize("args, missing", [(["suite", "--root", "."], "--model"), (["train", "--out", "x"], "--method")])
def test_commands_whose_default_would_mislead_require_the_choice(args, missing, capsys):
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2 and missing in capsys.readouterr().err


def test_every_flag_of_every_command_shows_its_default_in_help():
    import argparse

    from unbag.cli import parser

    def walk(p):
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for sp in a.choices.values():
                    yield from walk(sp)
            elif a.option_strings and a.default not in (None, False, argparse.SUPPRESS) and a.help != argparse.SUPPRESS:
                yield p.prog, a

    missing = [f"{prog} {a.option_strings[0]}" for prog, a in walk(parser()) if "(default" not in (a.help or "")]
    assert missing == []


def test_the_builtin_model_on_photographs_is_said_for_what_it_is(winoground_dir, capsys):
    assert main(["eval", "--bench", f"winoground:{winoground_dir}", "--quiet"]) == 0
    assert "no --model given: using the built-in model, a 3.5M-parameter dual encoder" in capsys.readouterr().err
    assert main(["eval", "--bench", "ctrl-retrieval:8", "--quiet"]) == 0  # generated scenes: the model's own world
    assert "no --model given" not in capsys.readouterr().err
