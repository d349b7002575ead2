"""unbag: measure and improve attribute/relation binding in dual-encoder vision-language models.

The public API (docs/api.md): `load_model`, `load_benchmark`, `score`, `evaluate`, `explain`,
`features`, `train`, `export`, `compare`, `report`, `run`, `run_paper`, `demo`, `suite`,
`build_world`, `build_pool`, `contact_sheet`, `make_negatives`, and `JobCache` (memory calls of one
job share). They are imported on first use, so `import unbag` loads neither torch nor any model.
"""
from .errors import UnbagError, UnbagWarning
from .version import __version__

__all__ = ["UnbagError", "UnbagWarning", "__version__", "load_model", "load_benchmark", "score", "evaluate", "explain",
           "features", "train", "export", "compare", "report", "run", "run_paper", "demo", "suite", "build_world",
           "build_pool", "contact_sheet", "make_negatives", "SuiteRun", "JobCache"]
_API = frozenset(__all__[3:])


def __getattr__(name: str):
    if name in _API:
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'unbag' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _API)
