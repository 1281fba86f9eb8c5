"""The connector's settings: the tier chain from text, and the namespace
its objects are written in, derived from the engine's configuration.

Tiers are given in chain order, comma-separated, as
``kv_connector_extra_config["tiers"]``:

    host:SIZE              host memory of this worker (e.g. host:8GiB)
    file:DIR[@SIZE]        one file per object under DIR (default 1 TiB)
    redis://HOST:PORT      a Redis server (objects are string values)

SIZE as hkv.parse_byte_size reads it ("8GiB", "1.5TB", "4096").
"""

import hashlib

from hkv import _hkv
from hkv.manager import make_groups

_HELP = ("tiers are comma-separated host:SIZE, file:DIR[@SIZE] or "
         "redis://HOST:PORT, e.g. 'host:8GiB,redis://127.0.0.1:6379'")


def parse_tiers(text):
    """[(kind, argument dict)] from a tier list; hkv.UsageError naming the
    entry when one is malformed."""
    if not isinstance(text, str) or not text.strip():
        raise _hkv.UsageError(f"kv_connector_extra_config.tiers is empty: "
                              f"{_HELP}")
    tiers = []
    for entry in (e.strip() for e in text.split(",")):
        if entry.startswith("host:"):
            tiers.append(("host", {"capacity_bytes":
                                   _size(entry, entry[len("host:"):])}))
        elif entry.startswith("file:"):
            path, _, size = entry[len("file:"):].partition("@")
            if not path:
                raise _hkv.UsageError(f"tier {entry!r} names no directory")
            args = {"directory": path}
            if size:
                args["capacity_bytes"] = _size(entry, size)
            tiers.append(("file", args))
        elif entry.startswith("redis://"):
            host, _, port = entry[len("redis://"):].rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise _hkv.UsageError(
                    f"tier {entry!r}: want redis://HOST:PORT with a port in "
                    "1..65535")
            tiers.append(("redis", {"host": host, "port": int(port)}))
        else:
            raise _hkv.UsageError(f"unknown tier {entry!r}: {_HELP}")
    return tiers


def _size(entry, text):
    try:
        return _hkv.parse_byte_size(text)
    except ValueError as e:
        raise _hkv.UsageError(f"tier {entry!r}: {e}") from None


def open_stores(tiers):
    """The stores of parse_tiers' list, in order."""
    makers = {"host": _hkv.host_store, "file": _hkv.open_file_store,
              "redis": _hkv.redis_store}
    return [makers[kind](**args) for kind, args in tiers]


def namespace(groups, hash_unit, **identity):
    """TierChain's namespace keywords for an engine whose cache groups are
    hkv group dicts (hkv.vllm.config.groups_from_config) keyed every
    `hash_unit` tokens: hkv's NamespaceOf (hkv/tier_namespace.h) over them
    and `identity` (model, dtype, page_bytes, tp_rank, tp_size, dcp_rank,
    salt_domain, key_scheme)."""
    config = _hkv.CacheConfig()
    config.groups = make_groups(groups)
    config.keys = _hkv.KeySchemeOptions(_hkv.KeyFunction.SHA256_CBOR,
                                        hash_unit, None)
    return _hkv.namespace_of(config, **identity)


def object_key(block_hash):
    """The 32-byte key an engine block hash names: itself when it is 32
    bytes (sha256, sha256_cbor), else its SHA-256."""
    if isinstance(block_hash, int):
        block_hash = block_hash.to_bytes(8, "big", signed=block_hash < 0)
    block_hash = bytes(block_hash)
    if len(block_hash) == 32:
        return block_hash
    return hashlib.sha256(b"hkv-engine-key" + block_hash).digest()
