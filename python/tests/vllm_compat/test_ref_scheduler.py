"""The engine's tests/v1/core/test_scheduler.py, collected unchanged."""
from tests.v1.core.test_scheduler import *  # noqa: F401,F403
