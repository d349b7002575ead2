"""The crepe release, in miniature (official layout, planted ties)."""
from ._files import COLORS, img

SPECS = {"crepe": "crepe:{dir}"}


def make(tmp_path_factory):
    """CREPE's unzipped data/: productivity swap-4 (a set literal; one negative equals the caption:
    a tie) and negate-5, systematicity seen-in-laion with three negative columns; VG images in
    VG_100K and VG_100K_2, one missing; boxes partly outside the picture."""
    root = tmp_path_factory.mktemp("crepe")
    img(root / "VG_100K" / "1.jpg", 900, size=(80, 60))
    img(root / "VG_100K_2" / "2.jpg", 901, size=(80, 60))
    head = "image_id,caption,n,n_objects,n_relations,n_attributes,n_connected_components,hard_negs,x,y,width,height\n"

    def row(i, cap, negs, box="10.0,5.0,50.0,40.0"):
        return f'{i},{cap},4,2,1,1,1,"{negs}",{box}\n'
    swap = head + row(1, "red cube on blue sphere", str({f"{c} cube on red sphere" for c in COLORS[1:6]})) + \
        row(2, "blue cube near red sphere", str(["red cube near blue sphere", "blue cube near red sphere", "a", "b", "c"]),
            "60.0,40.0,50.0,40.0") + row(3, "green cone", str(["red cone"] * 5))  # image 3 missing
    (root / "prod_hard_negatives" / "swap").mkdir(parents=True)
    (root / "prod_hard_negatives" / "swap" / "prod_vg_hard_negs_swap_complexity_4.csv").write_text(swap)
    (root / "prod_hard_negatives" / "negate").mkdir(parents=True)
    (root / "prod_hard_negatives" / "negate" / "prod_vg_hard_negs_negate_complexity_5.csv").write_text(
        head + row(1, "a red cube", str([f"not a {c} cube" for c in COLORS[:5]])))
    (root / "syst_hard_negatives").mkdir()
    (root / "syst_hard_negatives" / "syst_vg_hard_negs_seen_compounds_in_laion.csv").write_text(
        "region_id,image_id,caption,x,y,width,height,valid_hard_negs_atom,valid_hard_negs_comp,valid_hard_negs_combined\n"
        "7,2,blue cube,0,0,40,40,\"['red cube', 'blue cone']\",\"['cube blue']\",\"['red cube', 'blue cone', 'cube blue']\"\n")
    return root
