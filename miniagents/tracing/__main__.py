"""`python -m miniagents.tracing FILE.jsonl [--full]`: print a trace file as a tree (see `tree`). Importing this
module runs nothing."""
import sys

from .tree import main

if __name__ == "__main__":
    sys.exit(main())
