"""The engine's tests/v1/core/test_output.py, collected unchanged."""
from tests.v1.core.test_output import *  # noqa: F401,F403
