"""The reference engine's KV-cache config shapes, and hkv's cache groups
from them.

The dataclasses mirror the engine's ``kv_cache_interface`` names and fields
so that code written for the engine builds a config without it. Their
page-shape fields (``num_kv_heads``, ``head_size``, ``dtype``, ``shapes``,
``dtypes``) are accepted and unused: hkv manages block ids, not tensors.

``groups_from_config`` reads such a config, the engine's own objects, or
dicts with the same keys (a spec dict names its class or kind under
``"kind"``), and returns the pool size and hkv group dicts (see
hkv.make_group). A malformed config raises hkv.UsageError naming the field,
e.g. ``kv_cache_config.kv_cache_groups[1].kv_cache_spec.sliding_window``.
"""

import dataclasses

from hkv import _hkv
from hkv.manager import whole


@dataclasses.dataclass(frozen=True, kw_only=True)
class FullAttentionSpec:
    """Full attention. ``sliding_window`` and ``attention_chunk_size`` mark
    layers the engine manages as full attention; the group is full
    attention either way."""
    block_size: int
    num_kv_heads: int | None = None
    head_size: int | None = None
    dtype: object = None
    sliding_window: int | None = None
    attention_chunk_size: int | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class MLAAttentionSpec(FullAttentionSpec):
    """Multi-head latent attention: a full-attention group."""
    cache_dtype_str: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class SlidingWindowSpec:
    """Sliding-window attention over the last ``sliding_window`` tokens."""
    block_size: int
    sliding_window: int
    num_kv_heads: int | None = None
    head_size: int | None = None
    dtype: object = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class ChunkedLocalAttentionSpec:
    """Attention within chunks of ``attention_chunk_size`` tokens."""
    block_size: int
    attention_chunk_size: int
    num_kv_heads: int | None = None
    head_size: int | None = None
    dtype: object = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class MambaSpec:
    """Recurrent state (Mamba, GatedDeltaNet, ...). ``mamba_cache_mode``:
    ``"align"``, ``"all"`` or ``"none"`` (the engine's default: no prefix
    caching). ``num_prefill_checkpoint_blocks`` is hkv's
    ``checkpoint_blocks`` (0 or 1)."""
    block_size: int
    shapes: tuple = ()
    dtypes: tuple = ()
    mamba_cache_mode: str = "none"
    num_speculative_blocks: int = 0
    num_prefill_checkpoint_blocks: int = 0


@dataclasses.dataclass(frozen=True)
class KVCacheGroupSpec:
    """The layers sharing one block table, and their spec;
    ``is_eagle_group``: the layers of a draft model."""
    layer_names: list
    kv_cache_spec: object
    is_eagle_group: bool = False


@dataclasses.dataclass(frozen=True)
class KVCacheConfig:
    """``num_blocks`` blocks (the null block included) shared by the
    groups. ``kv_cache_tensors`` is accepted and unused."""
    num_blocks: int
    kv_cache_tensors: list = dataclasses.field(default_factory=list)
    kv_cache_groups: list = dataclasses.field(default_factory=list)


# Spec class names (the engine's, which these mirror) and short kinds ->
# hkv group kinds; None: a kind hkv does not manage.
_KINDS = {
    "FullAttentionSpec": "full",
    "TQFullAttentionSpec": "full",
    "MLAAttentionSpec": "full",
    "HiddenStateCacheSpec": "full",
    "SlidingWindowSpec": "sliding",
    "SlidingWindowMLASpec": "sliding",
    "ChunkedLocalAttentionSpec": "chunked",
    "MambaSpec": "mamba",
    "full_attention": "full",
    "mla_attention": "full",
    "sliding_window": "sliding",
    "chunked_local_attention": "chunked",
    "mamba": "mamba",
    "CrossAttentionSpec": None,
    "EncoderOnlyAttentionSpec": None,
    "SinkFullAttentionSpec": None,
    "UniformTypeKVCacheSpecs": None,
}
_MAMBA_MODES = ("align", "all", "none")
_MISSING = object()


def _get(source, key, path, default=_MISSING):
    """``source[key]`` for a dict, else ``source.key``; ``default`` when
    absent, or hkv.UsageError naming ``path.key`` when there is none."""
    if isinstance(source, dict):
        value = source.get(key, default)
    else:
        value = getattr(source, key, default)
    if value is _MISSING:
        raise _hkv.UsageError(f"{path}.{key} is missing")
    return value


def _kind(spec, path):
    """The hkv kind of an engine spec: from a dict's ``"kind"``, else from
    the first class in the object's MRO whose name is known."""
    if isinstance(spec, dict):
        names = [_get(spec, "kind", path)]
    else:
        names = [t.__name__ for t in type(spec).__mro__]
    for name in names:
        if name not in _KINDS:
            continue
        if _KINDS[name] is None:
            raise _hkv.UsageError(f"{path}: hkv does not manage {name} "
                                  "groups")
        return _KINDS[name]
    raise _hkv.UsageError(
        f"{path}: unknown spec kind {names[0]!r} (one of "
        f"{', '.join(k for k, v in _KINDS.items() if v)})")


def _group(spec, path, eagle):
    """One hkv group dict from the engine spec at ``path``; ``eagle``: the
    group feeds a draft model."""
    kind = _kind(spec, path)
    group = {"kind": kind,
             "block_size": whole(f"{path}.block_size",
                                 _get(spec, "block_size", path), minimum=1)}
    if kind != "mamba":
        group["eagle"] = eagle
    if kind == "sliding":
        group["window"] = whole(f"{path}.sliding_window",
                                _get(spec, "sliding_window", path), minimum=1)
    elif kind == "chunked":
        group["chunk"] = whole(f"{path}.attention_chunk_size",
                               _get(spec, "attention_chunk_size", path),
                               minimum=1)
    elif kind == "mamba":
        mode = _get(spec, "mamba_cache_mode", path, "none")
        if mode not in _MAMBA_MODES:
            raise _hkv.UsageError(
                f"{path}.mamba_cache_mode must be one of "
                f"{', '.join(_MAMBA_MODES)}, got {mode!r}")
        # The engine's manager treats "none" as "all" (its config turns
        # prefix caching off for "none").
        group["mode"] = "align" if mode == "align" else "all"
        for key, field in (("num_speculative_blocks", "speculative_blocks"),
                           ("num_prefill_checkpoint_blocks",
                            "checkpoint_blocks")):
            group[field] = whole(f"{path}.{key}", _get(spec, key, path, 0))
    return group


def group_specs(kv_cache_config):
    """The spec of each ``kv_cache_groups`` entry, in order (read as
    groups_from_config reads them)."""
    path = "kv_cache_config"
    return [_get(entry, "kv_cache_spec", f"{path}.kv_cache_groups[{i}]")
            for i, entry in enumerate(_get(kv_cache_config,
                                           "kv_cache_groups", path))]


def groups_from_config(kv_cache_config, use_eagle=False):
    """``(num_blocks, groups)`` from an engine-shaped KV cache config: its
    pool size and one hkv group dict per ``kv_cache_groups`` entry, in
    order. With ``use_eagle`` the groups flagged ``is_eagle_group`` (all of
    them when none is) feed a draft model: their hits drop the last block,
    as the engine's managers do; recurrent groups never drop. Raises
    hkv.UsageError naming a missing or malformed field."""
    path = "kv_cache_config"
    num_blocks = whole(f"{path}.num_blocks",
                       _get(kv_cache_config, "num_blocks", path), minimum=1)
    entries = _get(kv_cache_config, "kv_cache_groups", path)
    if not isinstance(entries, (list, tuple)):
        raise _hkv.UsageError(f"{path}.kv_cache_groups must be a list, got "
                              f"{entries!r}")
    flagged = [bool(_get(entry, "is_eagle_group", path, False))
               for entry in entries]
    if not any(flagged):
        flagged = [True] * len(entries)
    groups = []
    for i, entry in enumerate(entries):
        where = f"{path}.kv_cache_groups[{i}]"
        spec = _get(entry, "kv_cache_spec", where)
        groups.append(_group(spec, f"{where}.kv_cache_spec",
                             bool(use_eagle) and flagged[i]))
    return num_blocks, groups
