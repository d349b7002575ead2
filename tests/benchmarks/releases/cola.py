"""The cola release, in miniature (official layout, planted ties)."""
from ._files import COLORS, img, write_json

SPECS = {"cola": "cola:{dir}"}


def make(tmp_path_factory):
    """COLA's data/: the multi-object JSON (urls) and GQA and CLEVR single-object files, one as
    {labels, data}, one as [labels, data] without annotations; a class whose hard set has no positive;
    three records of one picture file, two of them positives of a CLEVR class (tied scores: the
    same file is encoded once, so its scores tie exactly whatever the batch or thread count)."""
    root = tmp_path_factory.mktemp("cola")
    for k in range(6):
        img(root / "images" / f"{k}.jpg", 980 + min(k, 3))
    one = {k: min(k, 3) for k in range(6)}  # records 3, 4 and 5 name the file 3.jpg
    write_json(root / "COLA_multiobjects_matching_benchmark.json",
          [[f"https://cs-people.bu.edu/array/data/vg_gqa_images/{a}.jpg", f"a {COLORS[a]} cube and a {COLORS[b]} ball",
            f"https://cs-people.bu.edu/array/data/vg_gqa_images/{b}.jpg", f"a {COLORS[b]} cube and a {COLORS[a]} ball"]
           for a, b in ((0, 1), (2, 3))])
    labels = ["red cube", "blue ball", "green cone"]
    data = [[f"{one[k]}.jpg", {"objects": []}, [int(k % 3 == c) for c in range(3)], [int(c != 2 or k == 4) for c in range(3)]]
            for k in range(6)]
    write_json(root / "COLA_singleobjects_benchmark_GQA.json", {"labels": labels, "data": data})
    write_json(root / "COLA_singleobjects_benchmark_CLEVR.json",
          [labels, [[f"images/{one[k]}.jpg", [int(k in (4, 5) if c == 0 else k == c) for c in range(3)], [1, 1, 1]]
                    for k in range(6)]])
    return root
