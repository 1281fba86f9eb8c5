"""The engine's tests/v1/core/test_encoder_cache_manager.py, collected unchanged."""
from tests.v1.core.test_encoder_cache_manager import *  # noqa: F401,F403
