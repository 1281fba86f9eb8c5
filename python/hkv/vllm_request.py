"""The engine's request shape, for schedulers without the engine, and what
hkv.vllm.KVCacheManager reads from a request to key it."""

import enum


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
    ids (prompt, then outputs), ``num_computed_tokens`` (the scheduler's
    count), ``status``, ``max_tokens`` and the key extras the manager
    reads (``cache_salt``, ``lora_request`` with ``lora_name``,
    ``lora_int_id`` and ``lora_path``, ``mm_features`` as ``(identifier,
    offset, length)`` triples, ``skip_reading_prefix_cache``)."""

    def __init__(self, request_id, prompt_token_ids, max_tokens=16, *,
                 cache_salt=None, lora_request=None, mm_features=(),
                 skip_reading_prefix_cache=False):
        self.request_id = request_id
        self.prompt_token_ids = list(prompt_token_ids)
        self.all_token_ids = list(self.prompt_token_ids)
        self.num_computed_tokens = 0
        self.status = RequestStatus.WAITING
        self.max_tokens = max_tokens
        self.num_preemptions = 0
        self.cache_salt = cache_salt
        self.lora_request = lora_request
        self.mm_features = list(mm_features)
        self.skip_reading_prefix_cache = skip_reading_prefix_cache

    @property
    def num_prompt_tokens(self):
        return len(self.prompt_token_ids)

    @property
    def num_tokens(self):
        return len(self.all_token_ids)

    @property
    def num_output_tokens(self):
        return self.num_tokens - self.num_prompt_tokens

    @property
    def output_token_ids(self):
        return self.all_token_ids[self.num_prompt_tokens:]

    def append_output_token_ids(self, token_ids):
        """Appends sampled tokens (an int or a list)."""
        if isinstance(token_ids, int):
            token_ids = [token_ids]
        self.all_token_ids.extend(token_ids)

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
    """hkv.Request options from an engine request's key extras (absent
    attributes: none)."""
    lora = getattr(request, "lora_request", None)
    return {
        "lora_name": getattr(lora, "lora_name", None),
        "lora_path": getattr(lora, "lora_path", None) or None,
        "lora_id": getattr(lora, "lora_int_id", None),
        "cache_salt": getattr(request, "cache_salt", None),
        "mm_features": [_mm_item(f) for f in
                        getattr(request, "mm_features", None) or ()],
        "prompt_embeds": getattr(request, "prompt_embeds", None),
        "skip_reading_prefix_cache": bool(
            getattr(request, "skip_reading_prefix_cache", False)),
        "full_events": getattr(request, "kv_cache_report_mode",
                               "incremental") == "full",
    }


def num_prompt_tokens(request):
    """``request.num_prompt_tokens``, else the length of its
    ``prompt_token_ids``."""
    count = getattr(request, "num_prompt_tokens", None)
    if count is None:
        count = len(request.prompt_token_ids)
    return count
