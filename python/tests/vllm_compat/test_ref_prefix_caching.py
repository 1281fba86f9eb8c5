"""The engine's tests/v1/core/test_prefix_caching.py, collected unchanged."""
from tests.v1.core.test_prefix_caching import *  # noqa: F401,F403
# `import *` skips private names: the autouse fixture that resets the hash
# seed before each test.
from tests.v1.core.test_prefix_caching import _auto_init_hash_fn  # noqa: F401
