import dataclasses

import pytest

import unbag
from unbag import protocols
from unbag.errors import UnbagError

# a runnable example of every registered protocol (a protocol registered without one fails below)
EXAMPLES = {"global": "global", "sgi": "sgi", "sgi:paper": "sgi:paper", "head:": "head:builtin:tfregions",
            "ttm:": "ttm:rounds=1,epochs=1"}


def test_every_registered_protocol_has_an_example():
    assert set(EXAMPLES) == set(protocols.PROTOCOLS)


@pytest.mark.parametrize("key", list(protocols.PROTOCOLS))
@pytest.mark.slow
def test_every_registered_protocol_scores_and_records_itself(key, tiny_bench):
    protocol = EXAMPLES[key]
    bench = unbag.load_benchmark(f"ctrl:{tiny_bench}")
    # one item of each split and category (the paper's grid crops cost about 0.3 s an item here)
    firsts = dataclasses.replace(bench, items=bench.items.take([n for n, it in enumerate(bench.items)
                                                                if it.id.endswith("-0000")]))
    res = unbag.evaluate("builtin", firsts, protocol, device="cpu")
    assert res["protocol"] == protocols.resolve(protocol, "builtin") and res["n_items"] == 10
    assert 0.0 <= res["metrics"]["all/all/group"] <= 1.0 and {"id/all/group", "ood/relation/group"} <= set(res["metrics"])
    one = bench.only(bench.items[0].id)  # what an option does is recorded on any item
    if protocols.PROTOCOLS[key].options:
        assert res["config"]["options"]["phases"] in (1, 2)
        assert unbag.evaluate("builtin", one, protocol, phases=1)["config"]["options"]["phases"] == 1
    else:
        with pytest.raises(UnbagError, match="takes no options, got phases"):
            unbag.evaluate("builtin", one, protocol, phases=1)
