"""`python -m unbag` (what torchrun launches with -m)."""
import sys

from .cli import main

sys.exit(main())
