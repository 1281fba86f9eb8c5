"""The cache manager in an engine scheduler's vocabulary.

``KVCacheManager`` wraps ``hkv._hkv.CacheManager`` (the C++ API, bound 1:1)
with the calls a serving engine's scheduler makes: ``get_computed_blocks``
for new requests, ``allocate_slots`` every step, ``commit`` when a chunk's
results are back, ``free`` when a request finishes. It keeps only what the
C++ API leaves to its caller: each request's lookup result until the
allocation that adopts it, which requests hold blocks, and which Request
uses each request_id (one live request per id).

Not thread-safe: one scheduler thread drives a manager (the C++ calls
release the GIL, so other Python threads run meanwhile).

Example::

    kv = hkv.KVCacheManager(groups="full:16", num_blocks=1024)
    r = kv.make_request("req-1", prompt_token_ids)
    blocks, hit = kv.get_computed_blocks(r)
    new = kv.allocate_slots(r, r.num_tokens - hit)
    if new is not None:
        ...                      # run kv.take_copies(), then the model
        kv.commit(r, r.num_tokens)
        kv.finish_step()
    kv.free(r)
"""

import itertools
import operator

from hkv import _hkv

U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1


def whole(name, value, maximum=U32_MAX, minimum=0):
    """``value`` as an int if it is a whole number in [minimum, maximum]
    (any integer type but bool); otherwise hkv.UsageError naming ``name``."""
    try:
        if isinstance(value, bool):
            raise TypeError
        number = operator.index(value)
    except TypeError:
        number = None
    if number is None or not minimum <= number <= maximum:
        raise _hkv.UsageError(
            f"{name} must be an int in [{minimum}, {maximum}], got {value!r}")
    return number


def optional_whole(name, value, maximum=U32_MAX, minimum=0):
    """None, or whole(name, value, ...)."""
    return None if value is None else whole(name, value, maximum, minimum)

# The library's one table of kind names (hkv/group_kind.h), aliases too.
_KINDS = {name: _hkv.parse_group_kind(name)
          for name in _hkv.group_kind_names()}
_MODES = {
    "align": _hkv.RecurrentMode.ALIGN,
    "all": _hkv.RecurrentMode.ALL,
    "none": _hkv.RecurrentMode.NONE,
}
# Dict keys (the group-list options' names are accepted too) -> GroupSpec
# fields taking plain numbers.
_NUMBER_FIELDS = {
    "block_size": "block_size",
    "window": "sliding_window",
    "sliding_window": "sliding_window",
    "output_window": "output_window",
    "chunk": "chunk_size",
    "chunk_size": "chunk_size",
    "spec": "speculative_blocks",
    "speculative_blocks": "speculative_blocks",
    "blocks": "scratch_blocks",
    "scratch_blocks": "scratch_blocks",
    "checkpoint_blocks": "checkpoint_blocks",
}


def _enum(table, value, what):
    if not isinstance(value, str):
        return value
    try:
        return table[value]
    except KeyError:
        raise _hkv.UsageError(
            f"unknown {what} {value!r} (one of {', '.join(table)})"
        ) from None


def _set_field(group, key, value):
    if key in _NUMBER_FIELDS:
        setattr(group, _NUMBER_FIELDS[key], whole(f"group field {key!r}",
                                                  value))
    elif key in ("mode", "recurrent_mode"):
        group.recurrent_mode = _enum(_MODES, value, "recurrent mode")
    elif key == "eagle":
        group.speculation = (
            _hkv.Speculation.EAGLE if value else _hkv.Speculation.NONE
        )
    elif key == "speculation":
        group.speculation = value
    elif key == "replicated":
        group.dcp_layout = (
            _hkv.DcpLayout.REPLICATED if value else _hkv.DcpLayout.SHARDED
        )
    elif key == "dcp_layout":
        group.dcp_layout = value
    elif key == "export":
        group.checkpoint_blocks = 1 if value else 0
    else:
        raise _hkv.UsageError(f"unknown group field {key!r}")


def make_group(spec):
    """One cache group from a ``GroupSpec``, a group-list entry such as
    ``"sliding:16:window=4096"``, a dict (``{"kind": "sliding",
    "block_size": 16, "window": 4096}``; keys are GroupSpec's fields or the
    group-list options) or an object whose attributes are such keys."""
    if isinstance(spec, _hkv.GroupSpec):
        return spec
    if isinstance(spec, str):
        groups = _hkv.parse_group_list(spec)
        if len(groups) != 1:
            raise _hkv.UsageError(f"{spec!r} is not one group")
        return groups[0]
    fields = dict(spec) if isinstance(spec, dict) else dict(vars(spec))
    group = _hkv.GroupSpec()
    group.kind = _enum(_KINDS, fields.pop("kind", "full"), "group kind")
    for key, value in fields.items():
        _set_field(group, key, value)
    return group


def make_groups(groups):
    """Cache groups from a group-list string (``"full:2048,recurrent:256"``,
    the syntax of ``hkv replay --groups``) or a list of what make_group
    takes."""
    if isinstance(groups, str):
        return _hkv.parse_group_list(groups)
    if not isinstance(groups, (list, tuple)):
        raise _hkv.UsageError(
            "groups must be a group-list str or a list of groups, got "
            f"{groups!r}")
    return [make_group(g) for g in groups]


def _multimodal_item(index, item):
    """A MultimodalItem from one, or from an (identifier, offset, length)
    triple."""
    if isinstance(item, _hkv.MultimodalItem):
        return item
    name = f"mm_features[{index}]"
    if (not isinstance(item, (tuple, list)) or len(item) != 3
            or not isinstance(item[0], str)):
        raise _hkv.UsageError(
            f"{name} must be a MultimodalItem or an (identifier: str, "
            f"offset, length) triple, got {item!r}")
    return _hkv.MultimodalItem(item[0], whole(f"{name} offset", item[1]),
                               whole(f"{name} length", item[2]))


def _prompt_embeds(embeds):
    """A PromptEmbeds from what Request accepts (see there)."""
    if embeds is None:
        return _hkv.PromptEmbeds(b"", 0)
    if isinstance(embeds, _hkv.PromptEmbeds):
        return embeds
    if isinstance(embeds, tuple):
        data, bytes_per_token = embeds
        return _hkv.PromptEmbeds(bytes(data), bytes_per_token)
    view = memoryview(embeds)
    if view.ndim != 2 or view.shape[0] == 0:
        raise _hkv.UsageError(
            "prompt_embeds must be 2-D (tokens x hidden) with at least one "
            f"row, not of shape {view.shape}")
    return _hkv.PromptEmbeds(view.tobytes(), view.nbytes // view.shape[0])


class Request(_hkv.Request):
    """A request's token ids (prompt, then accepted outputs) and the chained
    keys of its complete hash units, which grow with the tokens.

    Keys depend on the manager's key scheme: pass ``manager`` (or its
    ``key_scheme``), or call ``manager.make_request(...)``. ``request_id`` is
    any hashable; hkv numbers requests internally (``id``).
    ``mm_features`` are ``(identifier, offset, length)`` triples or
    ``MultimodalItem``s sorted by offset. ``lora_path`` goes with
    ``lora_name`` into every unit's key. ``prompt_embeds``: the prompt's
    embeddings, one row per prompt token, as a 2-D buffer (a numpy array;
    for a torch tensor ``t.contiguous().view(torch.uint8).numpy()``), a
    ``(bytes, bytes_per_token)`` pair or a ``PromptEmbeds``; each unit's key
    holds the SHA-256 of its rows' raw bytes.
    """

    _next_id = itertools.count()

    def __init__(self, request_id, prompt_token_ids, manager=None, *,
                 key_scheme=None, lora_name=None, lora_path=None,
                 lora_id=None, cache_salt=None, mm_features=(),
                 prompt_embeds=None,
                 skip_reading_prefix_cache=False, full_events=False):
        if key_scheme is None:
            if manager is None:
                raise _hkv.UsageError(
                    "a Request needs its manager (or its key_scheme)")
            key_scheme = manager.key_scheme
        items = [_multimodal_item(i, m) for i, m in enumerate(mm_features)]
        for name, text in (("lora_name", lora_name),
                           ("lora_path", lora_path),
                           ("cache_salt", cache_salt)):
            if text is not None and not isinstance(text, str):
                raise _hkv.UsageError(
                    f"{name} must be a str or None, got {text!r}")
        lora_id = optional_whole("lora_id", lora_id)
        extras = _hkv.KeyExtras(
            lora_name=lora_name or "", lora_path=lora_path or "",
            multimodal=items, cache_salt=cache_salt or "",
            prompt_embeds=_prompt_embeds(prompt_embeds))
        super().__init__(
            next(Request._next_id), prompt_token_ids, key_scheme, extras,
            _hkv.CacheRead.SKIPPED if skip_reading_prefix_cache
            else _hkv.CacheRead.ALLOWED,
            lora_id,
            _hkv.EventReport.FULL if full_events
            else _hkv.EventReport.INCREMENTAL)
        self.request_id = request_id
        # Tokens whose KV is computed (hit included); commit() sets it.
        self.num_computed_tokens = 0

    def append_output_token_ids(self, token_ids):
        """Appends accepted output tokens (an int or a list); keys the hash
        units they complete."""
        if isinstance(token_ids, int):
            token_ids = [token_ids]
        self.append_tokens(token_ids)

    @property
    def all_token_ids(self):
        return self.tokens

    @property
    def num_output_tokens(self):
        return self.num_tokens - self.num_prompt_tokens

    def __repr__(self):
        return (f"Request({self.request_id!r}, {self.num_tokens} tokens, "
                f"{self.num_computed_tokens} computed)")


class KVCacheBlocks:
    """Blocks per cache group: a lookup's hit or an allocation's new blocks.
    Block ids are converted to Python lists only when asked for."""

    __slots__ = ("_source",)

    def __init__(self, source):
        self._source = source  # CacheHit or NewBlocks

    def get_block_ids(self):
        """A tuple with one list of block ids per group (0: the null block,
        a position the group does not need)."""
        return tuple(self._source.blocks)

    @property
    def state_exports(self):
        """States the step's recurrent kernel must leave (new blocks only)."""
        return getattr(self._source, "state_exports", [])

    @property
    def raw(self):
        """The CacheHit or NewBlocks behind these blocks."""
        return self._source

    def __len__(self):
        return sum(len(g) for g in self._source.blocks)

    def __repr__(self):
        return f"KVCacheBlocks({list(self.get_block_ids())})"
