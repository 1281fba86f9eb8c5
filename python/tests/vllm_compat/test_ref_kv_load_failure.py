"""The engine's tests of its scheduler and manager when a KV connector's
loads fail (tests/v1/kv_connector/unit: test_error_propagation,
test_cache_pollution_prevention, test_invalid_blocks_correctness,
test_kv_load_failure_recovery), collected unchanged.

Each builds a scheduler from its module's ``create_vllm_config()``, whose
default connector (NIXL) does not import here, and then replaces the
connector with a ``Mock``: only the configuration changes, to name hkv's
own connector, which builds on CPU; what the tests exercise is the
scheduler and the KV-cache manager (hkv's, substituted like the other
test_ref_* files) recovering from the failed blocks."""
import functools

import pytest

from tests.v1.kv_connector.unit import utils
from tests.v1.kv_connector.unit import (
    test_cache_pollution_prevention, test_error_propagation,
    test_invalid_blocks_correctness, test_kv_load_failure_recovery)
from tests.v1.kv_connector.unit.test_cache_pollution_prevention import *  # noqa: F401,F403,E501
from tests.v1.kv_connector.unit.test_error_propagation import *  # noqa: F401,F403,E501
from tests.v1.kv_connector.unit.test_invalid_blocks_correctness import *  # noqa: F401,F403,E501
from tests.v1.kv_connector.unit.test_kv_load_failure_recovery import *  # noqa: F401,F403,E501

_HKV_CONFIG = functools.partial(
    utils.create_vllm_config, kv_connector="HkvConnector",
    kv_connector_module_path="hkv.vllm.connector",
    kv_connector_extra_config={"tiers": "host:64MiB", "tier_io": "inline"})


@pytest.fixture(autouse=True)
def _constructible_connector(monkeypatch):
    for module in (test_cache_pollution_prevention, test_error_propagation,
                   test_invalid_blocks_correctness,
                   test_kv_load_failure_recovery):
        monkeypatch.setattr(module, "create_vllm_config",
                            lambda **kwargs: _HKV_CONFIG(**kwargs))
