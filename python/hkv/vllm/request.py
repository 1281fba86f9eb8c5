"""The engine's request shape, for schedulers without the engine."""

import enum

from hkv import _hkv
from hkv.manager import Request as KeyedRequest, whole


class RequestStatus(enum.Enum):
    """Where a request is in the scheduler (the engine's states)."""
    WAITING = enum.auto()
    RUNNING = enum.auto()
    PREEMPTED = enum.auto()
    FINISHED_STOPPED = enum.auto()
    FINISHED_LENGTH_CAPPED = enum.auto()
    FINISHED_ABORTED = enum.auto()


class Request:
    """A request shaped like the engine's, for schedulers without it: token
    ids (prompt, then outputs), their ``block_hashes`` (one chained key
    per ``hash_block_size`` tokens, which must be the manager's; hkv's
    SHA-256 CBOR keys, the key extras in them), ``num_computed_tokens``
    (the scheduler's count), ``status``, ``num_preemptions``,
    ``max_tokens`` and the key extras (``cache_salt``, ``lora_request``
    with ``lora_name``, ``lora_int_id`` and ``lora_path``, ``mm_features``
    as ``(identifier, offset, length)`` triples,
    ``skip_reading_prefix_cache``)."""

    def __init__(self, request_id, prompt_token_ids, max_tokens=16, *,
                 hash_block_size=16, cache_salt=None, lora_request=None,
                 mm_features=(), skip_reading_prefix_cache=False):
        self.request_id = request_id
        self.prompt_token_ids = list(prompt_token_ids)
        self.num_computed_tokens = 0
        self.status = RequestStatus.WAITING
        self.max_tokens = max_tokens
        self.num_preemptions = 0
        self.cache_salt = cache_salt
        self.lora_request = lora_request
        self.mm_features = list(mm_features)
        self.skip_reading_prefix_cache = skip_reading_prefix_cache
        scheme = _hkv.make_key_scheme(_hkv.KeySchemeOptions(
            _hkv.parse_key_function("sha256_cbor"),
            whole("hash_block_size", hash_block_size, minimum=1), None))
        self._keyed = KeyedRequest(request_id, self.prompt_token_ids,
                                   key_scheme=scheme, **key_options(self))
        self.block_hashes = self._keyed.keys

    @property
    def all_token_ids(self):
        return self._keyed.tokens

    @property
    def num_prompt_tokens(self):
        return len(self.prompt_token_ids)

    @property
    def num_tokens(self):
        return self._keyed.num_tokens

    @property
    def num_output_tokens(self):
        return self.num_tokens - self.num_prompt_tokens

    @property
    def output_token_ids(self):
        return self.all_token_ids[self.num_prompt_tokens:]

    def append_output_token_ids(self, token_ids):
        """Appends sampled tokens (an int or a list) and keys the blocks
        they complete."""
        if isinstance(token_ids, int):
            token_ids = [token_ids]
        self._keyed.append_output_token_ids(list(token_ids))
        keys = self._keyed.keys
        self.block_hashes.extend(keys[len(self.block_hashes):])

    def is_finished(self):
        return self.status.name.startswith("FINISHED")

    def __repr__(self):
        return (f"Request({self.request_id!r}, {self.num_tokens} tokens, "
                f"{self.num_computed_tokens} computed, {self.status.name})")


def _mm_item(feature):
    """An engine multimodal feature (``identifier`` and ``mm_position``
    with ``offset`` and ``length``) as hkv's triple; a triple as is."""
    if isinstance(feature, (tuple, list)):
        return feature
    position = feature.mm_position
    return (feature.identifier, position.offset, position.length)


def key_options(request):
    """hkv.Request key extras from a request's attributes."""
    lora = request.lora_request
    return {
        "lora_name": getattr(lora, "lora_name", None),
        "lora_path": getattr(lora, "lora_path", None) or None,
        "lora_id": getattr(lora, "lora_int_id", None),
        "cache_salt": request.cache_salt,
        "mm_features": [_mm_item(f) for f in request.mm_features],
    }
