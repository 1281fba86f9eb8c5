"""The engine's tests/v1/core/test_async_scheduler.py, collected unchanged."""
from tests.v1.core.test_async_scheduler import *  # noqa: F401,F403
