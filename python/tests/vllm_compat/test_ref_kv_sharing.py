"""The engine's tests/v1/core/test_kv_sharing.py, collected unchanged."""
from tests.v1.core.test_kv_sharing import *  # noqa: F401,F403
