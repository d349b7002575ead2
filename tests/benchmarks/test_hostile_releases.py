"""Trust III on the readers: careless or hostile release files end in exit 2 naming the file, line
and field (never a traceback or a hang), and no record is dropped or mis-bucketed silently."""
from __future__ import annotations

import json
import os
import shutil
import threading

import pytest

from unbag import benchmarks
from unbag.cli import main
from unbag.errors import UnbagError

CREPE = "prod_hard_negatives/swap/prod_vg_hard_negs_swap_complexity_4.csv"


def _copy(src, dst):
    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize("name", ["macro", "all"])
def test_a_subset_named_like_a_summary_key_is_refused(colorswap_dir, tmp_path, name):
    root = _copy(colorswap_dir, tmp_path / "data")
    recs = json.loads((root / "test.json").read_text())
    recs[1]["image_source"] = name
    (root / "test.json").write_text(json.dumps(recs))
    with pytest.raises(UnbagError, match=f"its subset is named '{name}', a name the results keep for their summaries"):
        benchmarks.load(f"colorswap:{root}")


def test_crepe_rows_without_a_negative_are_counted_and_warned(crepe_dir, tmp_path):
    root = _copy(crepe_dir, tmp_path / "crepe")
    f = root / CREPE
    lines = f.read_text().splitlines()
    lines[1] = lines[1].split(',"')[0] + ',"[]",10.0,5.0,50.0,40.0'
    f.write_text("\n".join(lines) + "\n")
    with pytest.warns(UserWarning, match=r"1 row\(s\) left out because they list no negative caption \(prod-swap-4: 1\)"):
        b = benchmarks.load(f"crepe:{root}")
    assert b.info["dropped_no_negative"] == {"prod-swap-4": 1}


@pytest.mark.parametrize("box, why", [("10.0,5.0,0,0", "must be positive"), ("10.0,5.0,nan,40", "finite")])
def test_crepe_box_of_no_area_is_refused(crepe_dir, tmp_path, box, why):
    root = _copy(crepe_dir, tmp_path / "crepe")
    f = root / CREPE
    lines = f.read_text().splitlines()
    lines[1] = lines[1].rsplit(",", 4)[0] + "," + box
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(UnbagError, match=f"{CREPE}:2: fields width and height .*{why}"):
        benchmarks.load(f"crepe:{root}")


@pytest.mark.parametrize("how, why", [("quote", "(a quoted field runs on to line|not a readable CSV row)"),
                                      ("huge", "not a readable CSV row .*field larger than field limit"),
                                      ("short", "\\d+ column\\(s\\) missing")])
def test_crepe_csv_that_csv_cannot_read_is_located(crepe_dir, tmp_path, how, why):
    root = _copy(crepe_dir, tmp_path / "crepe")
    f = root / CREPE
    lines = f.read_text().splitlines()
    if how == "quote":
        lines[1] = lines[1].replace('}"', '}', 1)  # the set literal's closing quote lost
    elif how == "huge":
        lines[1] = lines[1].replace("red cube on blue sphere", '"' + "x" * 140_000 + '"', 1)
    else:
        lines[1] = ",".join(lines[1].split(",")[:3])
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(UnbagError, match=f"{CREPE}:2: {why}"):
        benchmarks.load(f"crepe:{root}")


def test_a_fifo_where_a_file_is_expected_is_refused_not_waited_on(naturalbench_dir, tmp_path, capsys):
    root = _copy(naturalbench_dir, tmp_path / "nb")
    (root / "metadata.json").unlink()
    os.mkfifo(root / "metadata.json")
    got = {}
    t = threading.Thread(target=lambda: got.setdefault("code", main(["eval", "--model", "builtin", "--bench",
                                                                      f"naturalbench:{root}", "--quiet"])), daemon=True)
    t.start()
    t.join(60)
    if t.is_alive():  # unblock the reader so that the test run can end
        with open(root / "metadata.json", "w") as w:
            w.write("[]")
        pytest.fail("unbag waited on a FIFO")
    assert got["code"] == 2 and "not a regular file" in capsys.readouterr().err


def test_vismin_shard_names_that_are_no_file_names_are_refused(vismin_dir, tmp_path):
    root = _copy(vismin_dir, tmp_path / "vismin")
    state = root / "data" / "test" / "state.json"
    for name, why in ((5, "must be a file name, got 5"), ("../../../x.arrow", "shard .* lies outside")):
        state.write_text(json.dumps({"_data_files": [{"filename": name}]}))
        with pytest.raises(UnbagError, match=rf"state.json: _data_files\[0\]: field 'filename'.*{why}"):
            benchmarks.load(f"vismin:{root}")


def test_a_truncated_svo_probes_csv_names_its_line(svo_probes_dir, tmp_path):
    root = _copy(svo_probes_dir, tmp_path / "svo")
    f = root / "svo_probes.csv"
    f.write_text(f.read_text()[:-40])  # the download cut off in the last row
    with pytest.raises(UnbagError, match=r"svo_probes.csv:6: \d+ column\(s\) missing"):
        benchmarks.load(f"svo-probes:{root}")


def test_eqben_sample_count_that_is_no_number_is_refused(eqben_dir, tmp_path):
    root = _copy(eqben_dir, tmp_path / "eqben")
    f = root / "annotation" / "ann_json_finegrained_random.json"
    recs = json.loads(f.read_text())
    recs[0]["private_info"]["sample_cnt"] = float("nan")
    f.write_text(json.dumps(recs))
    with pytest.raises(UnbagError, match=r"item 0: field 'private_info.sample_cnt' must be a whole number, got nan"):
        benchmarks.load(f"eqben:{root}")


def test_an_npy_frame_whose_header_claims_gigapixels_is_refused_unread(eqben_dir, tmp_path, capsys):
    import numpy as np

    root = _copy(eqben_dir, tmp_path / "eqben")
    frame = next(root.rglob("*.npy"))
    with open(frame, "wb") as fh:  # a header for 100000 x 100000 x 3 bytes, and no data
        np.lib.format.write_array_header_1_0(fh, {"descr": "|u1", "fortran_order": False, "shape": (100000, 100000, 3)})
    code = main(["eval", "--model", "builtin", "--bench", f"eqben:{root}", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and frame.name in err and "too large" in err and "Traceback" not in err


def test_a_truncated_parquet_is_named(bivlc_dir, tmp_path):
    root = _copy(bivlc_dir, tmp_path / "bivlc")
    f = root / "test-00000.parquet"
    f.write_bytes(f.read_bytes()[:200])
    with pytest.raises(UnbagError, match="test-00000.parquet: not a readable parquet file"):
        benchmarks.load(f"bivlc:{root}")


@pytest.mark.parametrize("field, value, why", [("caption_2", None, "missing field 'caption_2'"),
                                               ("id", float("nan"), "field 'id' must be a whole number or a name, got nan"),
                                               ("id", 2.5, "field 'id' must be a whole number or a name, got 2.5")])
def test_colorswap_records_name_the_item_and_field_at_fault(colorswap_dir, tmp_path, field, value, why):
    root = _copy(colorswap_dir, tmp_path / "data")
    recs = json.loads((root / "test.json").read_text())
    if value is None:
        del recs[1][field]
    else:
        recs[1][field] = value
    (root / "test.json").write_text(json.dumps(recs))
    with pytest.raises(UnbagError, match=rf"test.json: item 1: {why}"):
        benchmarks.load(f"colorswap:{root}")


def test_whatsup_record_without_its_image_path_is_located(whatsup_dir, tmp_path):
    root = _copy(whatsup_dir, tmp_path / "data")
    f = root / "controlled_images_dataset.json"
    recs = json.loads(f.read_text())
    del recs[2]["image_path"]
    f.write_text(json.dumps(recs))
    with pytest.raises(UnbagError, match=r"controlled_images_dataset.json: item 2: missing field 'image_path'"):
        benchmarks.load(f"whatsup:{root}")
