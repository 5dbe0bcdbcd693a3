"""Shared test setup: import the collection from this checkout, not from an installed copy."""

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLES = REPO_ROOT / "tests" / "samples"

# collections/ansible_collections/ncclkit/cluster links to the checkout.
sys.path.insert(0, str(REPO_ROOT / "collections"))
sys.path.insert(0, str(REPO_ROOT / "src"))
