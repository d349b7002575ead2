"""The vismin release, in miniature (official layout, planted ties)."""
from ._files import COLORS, png_bytes, write_json

SPECS = {"vismin": "vismin:{dir}"}


def make(tmp_path_factory):
    """The vismin-bench kit as it is today: save_to_disk's data/ (two Arrow stream shards,
    state.json), no solution file; row 2's two images are the same picture (ties)."""
    import pyarrow as pa

    root = tmp_path_factory.mktemp("vismin")
    rows = [{"image_0": {"bytes": png_bytes(20 + 2 * k), "path": None}, "text_0": f"{k + 2} {COLORS[k]} dogs on a sofa",
             "image_1": {"bytes": png_bytes(21 + 2 * k if k != 2 else 24), "path": None},
             "text_1": f"{k + 3} {COLORS[k]} dogs on a sofa", "question_1": "?", "question_2": "?", "question_3": "?",
             "question_4": "?", "id": f"v{k}", "category": ["counting", "object", "counting"][k]} for k in range(3)]
    test = root / "data" / "test"
    test.mkdir(parents=True)
    names = []
    for s, part in enumerate((rows[:2], rows[2:])):
        table = pa.Table.from_pylist(part)
        names.append(f"data-0000{s}-of-00002.arrow")
        with pa.OSFile(str(test / names[-1]), "wb") as f, pa.ipc.new_stream(f, table.schema) as w:
            w.write_table(table)
    write_json(test / "state.json", {"_data_files": [{"filename": n} for n in names], "_split": "test"})
    write_json(test / "dataset_info.json", {})
    write_json(root / "data" / "dataset_dict.json", {"splits": ["test"]})
    return root
