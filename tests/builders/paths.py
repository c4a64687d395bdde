"""Where the tests' inputs live: the checkout, the small hand-made fixtures, the real samples."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"  # the small hand-made inputs, shared by every stage
# The real samples: $BURSTLAKE_SAMPLES (as for the demo), else ../shared/data.
SHARED_DATA = Path(os.environ.get("BURSTLAKE_SAMPLES") or REPO.parent / "shared" / "data")
SCENARIOS = REPO / "replay" / "scenarios"  # the shipped what-if scenarios
