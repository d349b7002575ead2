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
    res = unbag.evaluate("builtin", f"ctrl:{tiny_bench}", protocol, device="cpu")
    assert res["protocol"] == protocols.resolve(protocol, "builtin") and res["n_items"] == 30
    assert 0.0 <= res["metrics"]["all/all/group"] <= 1.0
    bench = unbag.load_benchmark(f"ctrl:{tiny_bench}")
    one = bench.only(bench.items[0].id)  # what an option does is recorded on any item
    if protocols.PROTOCOLS[key].options:
        assert res["config"]["options"]["phases"] in (1, 2)
        assert unbag.evaluate("builtin", one, protocol, phases=1)["config"]["options"]["phases"] == 1
    else:
        with pytest.raises(UnbagError, match="takes no options, got phases"):
            unbag.evaluate("builtin", one, protocol, phases=1)
