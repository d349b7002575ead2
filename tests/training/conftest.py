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
