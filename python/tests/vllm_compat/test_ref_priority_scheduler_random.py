"""The engine's tests/v1/core/test_priority_scheduler_random.py, collected unchanged."""
from tests.v1.core.test_priority_scheduler_random import *  # noqa: F401,F403
