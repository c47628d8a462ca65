"""The loop's observable behaviour, pinned: each golden transcript regenerates identically."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "golden"))

import transcripts  # noqa: E402


def test_golden_transcripts_are_unchanged():
    assert transcripts.check() == [], "run `python tests/golden/transcripts.py --write` and review the diff"
