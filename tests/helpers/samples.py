"""Where the Harn samples (../shared/harn-samples) are: beside the checkout, as CI lays them out."""

from __future__ import annotations

import os
from pathlib import Path

_REPO = Path(__file__).resolve().parents[2]


def _find() -> Path:
    candidates = [os.environ.get("HARN_SAMPLES"), _REPO.parent / "shared" / "harn-samples", "/work/shared/harn-samples"]
    for c in candidates:
        if c and Path(c).is_dir():
            return Path(c)
    return _REPO.parent / "shared" / "harn-samples"


SAMPLES = _find()
