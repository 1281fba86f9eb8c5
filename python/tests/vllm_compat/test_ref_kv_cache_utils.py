"""The engine's tests/v1/core/test_kv_cache_utils.py, collected unchanged."""
from tests.v1.core.test_kv_cache_utils import *  # noqa: F401,F403
# `import *` skips private names: the autouse fixture that resets the hash
# seed before each test.
from tests.v1.core.test_kv_cache_utils import _auto_init_hash_fn  # noqa: F401
