"""The engine's tests/v1/core/test_single_type_kv_cache_manager.py, collected unchanged."""
from tests.v1.core.test_single_type_kv_cache_manager import *  # noqa: F401,F403
