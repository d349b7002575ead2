from unbag.benchmarks.retrieval import ctrl_retrieval
from unbag.world import stream


def test_ctrl_retrieval_is_drawn_from_the_pretraining_distribution():
    r = ctrl_retrieval(n=60, px=16, style="flat")
    assert r.info["distribution"] == "pretraining"
    samples = [stream.sample(r.info["seed"], k, 16, "pretraining") for k in range(60)]
    assert any(s.scene.held_out() for s in samples)  # held-out combinations are general ability here
    assert [r.texts[i[0]] for i in r.image_texts] == [s.caption for s in samples]
