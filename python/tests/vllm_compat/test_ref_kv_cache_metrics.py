"""The engine's tests/v1/core/test_kv_cache_metrics.py, collected unchanged."""
from tests.v1.core.test_kv_cache_metrics import *  # noqa: F401,F403
