import pytest


@pytest.fixture
def interrupted(monkeypatch):
    """interrupted(cfg, out, at): run a Trainer that dies (KeyboardInterrupt) in its at-th loss call."""
    from unbag.training import engine

    def run(cfg, out, at: int) -> None:
        calls, real = {"n": 0}, engine.Trainer._loss

        def dying(self, batch):
            calls["n"] += 1
            if calls["n"] == at:
                raise KeyboardInterrupt
            return real(self, batch)

        monkeypatch.setattr(engine.Trainer, "_loss", dying)
        try:
            with pytest.raises(KeyboardInterrupt):
                engine.Trainer(cfg, out).fit(progress=False)
        finally:
            monkeypatch.setattr(engine.Trainer, "_loss", real)
    return run


@pytest.fixture
def resumed(interrupted, tmp_path):
    """resumed(make_cfg) -> (log of a whole run, log of a run killed in its 5th step and resumed), the
    runs in tmp_path/full and tmp_path/cut; make_cfg() gives a 6-step config with checkpoints every 3."""
    import json

    from unbag.training import engine

    def run(make_cfg):
        engine.Trainer(make_cfg(), tmp_path / "full").fit(progress=False)
        interrupted(make_cfg(), tmp_path / "cut", 5)  # the checkpoint of step 3 survives
        engine.Trainer(make_cfg(), tmp_path / "cut").fit(resume=True, progress=False)
        return tuple([json.loads(x) for x in (tmp_path / d / "log.jsonl").read_text().splitlines()]
                     for d in ("full", "cut"))
    return run
