"""`python -m miniagents.tracing FILE.jsonl [--full]`: print a trace file as a tree (see `tree`)."""
import sys

from .tree import main

sys.exit(main())
