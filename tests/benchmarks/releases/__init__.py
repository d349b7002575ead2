"""Tiny copies of each public benchmark laid out exactly as its official release leaves it, with
planted ties: one module per release, `make(tmp_path_factory)` building it and `SPECS` the benchmark
specs that read it ("{dir}" for its folder). tests/conftest.py makes each module a session fixture
`MODULE_dir`; a new benchmark's fixture is one new file here."""
