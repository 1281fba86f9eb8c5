"""The engine's tests/v1/core/test_repetition_detection.py, collected unchanged."""
from tests.v1.core.test_repetition_detection import *  # noqa: F401,F403
