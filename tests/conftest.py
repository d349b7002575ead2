import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def tiny_bench(tmp_path_factory):
    """A small ctrl benchmark on disk (3 items per category and split)."""
    from unbag.world.io import build

    return build(tmp_path_factory.mktemp("bench") / "ctrl", seed=3, per_category=3, progress=False)
