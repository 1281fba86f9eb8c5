"""hkv.vllm.KVCacheManager's core (_hkv.VllmManagerCore, C++): its
allocate_slots takes a running request's calls and a request's admission
itself and hands every other to the manager's Python, ``_allocate_slots``.
The two paths must be one:
same blocks, same tables, same free queue and cache after every call, the
same errors."""
import gc
import random
import weakref

import pytest

import hkv
import hkv.vllm as v
from hkv import _hkv
from test_vllm_manager import admit, config

SPECS = (v.FullAttentionSpec(block_size=16),
         v.MambaSpec(block_size=16, mamba_cache_mode="align"),
         v.SlidingWindowSpec(block_size=16, sliding_window=48))


class PythonOnly(v.KVCacheManager):
    """Every lookup and allocation through the manager's Python."""

    def allocate_slots(self, request, *args, **kwargs):
        return self._allocate_slots(request, *args, **kwargs)

    def get_computed_blocks(self, request):
        return self._get_computed_blocks(request)

    def get_num_common_prefix_blocks(self, running_request_id):
        return self._get_num_common_prefix_blocks(running_request_id)


class Counted(v.KVCacheManager):
    """Counts the calls the core hands to the manager's Python."""
    handed = 0
    lookups_handed = 0

    def _allocate_slots(self, *args, **kwargs):
        Counted.handed += 1
        return super()._allocate_slots(*args, **kwargs)

    def _get_computed_blocks(self, request):
        Counted.lookups_handed += 1
        return super()._get_computed_blocks(request)


class Int(int):
    """An int the core does not take as one (it hands the call over)."""


def state(kv, rid):
    cache = kv.cache
    holds = rid in kv.holding_request_ids()
    return (kv.get_block_ids(rid), cache.free_queue(),
            cache.cached_blocks_per_group(), list(kv._new_block_ids),
            kv.get_num_common_prefix_blocks(rid) if holds else None)


def ids(blocks):
    return None if blocks is None else blocks.get_block_ids()


@pytest.mark.parametrize("seed", range(20))
def test_the_core_and_the_python_path_place_the_same_blocks(seed):
    rng = random.Random(seed)
    num_blocks = rng.randrange(40, 120)
    managers = [cls(config(*SPECS, num_blocks=num_blocks),
                    max_model_len=4096, hash_block_size=16, log_stats=True)
                for cls in (Counted, PythonOnly)]
    Counted.handed = Counted.lookups_handed = 0
    odd_calls = 0
    shared = [rng.randrange(100) for _ in range(rng.randrange(0, 80))]
    prompts = [shared + [rng.randrange(100) for _ in range(rng.randrange(1, 90))]
               for _ in range(4)]
    requests = [[v.Request(f"r{i}", p) for i, p in enumerate(prompts)]
                for _ in managers]
    for kv, rs in zip(managers, requests):
        for r in rs:
            admit(kv, r)
    for step in range(60):
        i = rng.randrange(len(prompts))
        lookahead = rng.choice((0, 0, 2))
        delay = rng.random() < 0.1
        odd = rng.random() < 0.1  # an int subclass: handed to Python
        results = []
        for kv, rs in zip(managers, requests):
            r = rs[i]
            if r.request_id not in kv._tracked:
                results.append("freed")
                continue
            r.append_output_token_ids(rng.randrange(100) if kv is managers[0]
                                      else requests[0][i].all_token_ids[-1])
            n = r.num_tokens - r.num_computed_tokens
            odd_calls += odd and kv is managers[0]
            new = kv.allocate_slots(r, Int(n) if odd else n,
                                    num_lookahead_tokens=lookahead,
                                    delay_cache_blocks=delay)
            if new is not None:
                r.num_computed_tokens = r.num_tokens
                if delay:
                    kv.cache_blocks(r, r.num_computed_tokens)
            results.append((ids(new), state(kv, r.request_id)))
            kv.take_new_block_ids()
        assert results[0] == results[1], (seed, step)
        if rng.random() < 0.1:  # freed, then back: a lookup
            # Preempted (the same object back from no computed tokens), or
            # a new request, longer, under the same id.
            preempted = rng.random() < 0.5
            more = [rng.randrange(100) for _ in range(rng.randrange(1, 40))]
            admitted = []
            for kv, rs in zip(managers, requests):
                kv.free(rs[i])
                if preempted:
                    rs[i].num_computed_tokens = 0
                else:
                    rs[i] = v.Request(f"r{i}", rs[i].all_token_ids + more)
                hit, new = admit(kv, rs[i])
                admitted.append((hit, ids(new), state(kv, f"r{i}")))
            assert admitted[0] == admitted[1], (seed, step)
    stats = [kv.make_prefix_cache_stats() for kv in managers]
    assert stats[0] == stats[1] and stats[0].requests > len(prompts)
    # Only the first lookup, before any keys were read, goes to Python.
    assert Counted.lookups_handed == 1
    # Int subclasses go to Python, and the first admission if the digest
    # size is not learnt by then (a prompt shorter than a block); other
    # admissions, retries after a refusal and decode calls must not.
    assert odd_calls <= Counted.handed <= odd_calls + 1, \
        (Counted.handed, odd_calls)


class Lora:
    def __init__(self, lora_int_id):
        self.lora_int_id = lora_int_id
        self.lora_name = f"lora{lora_int_id}"
        self.lora_path = None


def mirror_fields(kv, rid):
    mirror = kv._tracked[rid].mirror
    return (mirror.id, mirror.num_tokens, mirror.num_prompt_tokens,
            mirror.keys, mirror.cache_read, mirror.lora_id)


def admissions(seed):
    """Admissions of 30 requests into a Counted and a PythonOnly manager,
    compared after each; a refused one is retried (after its tokens grew,
    the held requests freed) or freed. (Calls handed to Python, hits cut,
    refusals, retries.)"""
    rng = random.Random(seed)
    num_blocks = rng.randrange(30, 90)
    specs = SPECS if seed % 2 else SPECS[:1]
    managers = [cls(config(*specs, num_blocks=num_blocks),
                    max_model_len=4096, hash_block_size=16)
                for cls in (Counted, PythonOnly)]
    for kv in managers:  # the digest size learnt (by the Python path)
        first = v.Request("first", range(16))
        admit(kv, first)
        kv.free(first)
    Counted.handed = Counted.lookups_handed = 0
    shared = [rng.randrange(100) for _ in range(rng.randrange(16, 80))]
    cut_short = refused = retried = 0
    held = []

    def attempt(kv, r, form, whole, lookahead, delay):
        nonlocal cut_short
        blocks, hit = None, 0
        if form != "none":
            blocks, hit = kv.get_computed_blocks(r)
        if form == "cut" and hit >= 32:
            hit -= 16  # handed to Python, which cuts the hit
            blocks = None
            cut_short += kv is managers[0]
        n = r.num_tokens - hit
        new = kv.allocate_slots(r, n, hit, blocks,
                                num_lookahead_tokens=lookahead,
                                delay_cache_blocks=delay,
                                full_sequence_must_fit=whole)
        if new is not None and delay:
            kv.cache_blocks(r, hit + n)
        result = (hit, ids(new), state(kv, r.request_id),
                  mirror_fields(kv, r.request_id))
        kv.take_new_block_ids()
        return new, result

    for i in range(30):
        prompt = shared + [rng.randrange(100)
                           for _ in range(rng.randrange(1, 90))]
        outputs = [rng.randrange(100) for _ in range(rng.randrange(0, 20))]
        more = [rng.randrange(100) for _ in range(rng.randrange(0, 20))]
        options = dict(
            lora_request=Lora(rng.randrange(3)) if rng.random() < 0.2
            else None,
            skip_reading_prefix_cache=rng.random() < 0.1)
        form = rng.choice(("lookup", "lookup", "none", "cut"))
        whole = rng.random() < 0.5
        lookahead = rng.choice((0, 0, 3))
        delay = rng.random() < 0.1
        keep = rng.random() < 0.5
        retry = rng.choice(("lookup", "none", None))
        if len(held) > 2:
            rid = held.pop(0)
            for kv in managers:
                kv.free(kv._tracked[rid].request)
        results = []
        for kv in managers:
            r = v.Request(f"a{i}", prompt, **options)
            r.append_output_token_ids(outputs)  # resumed: outputs to key
            new, result = attempt(kv, r, form, whole, lookahead, delay)
            results.append(result)
            if new is None and retry is not None:
                # Retried with more tokens once the held requests are gone.
                results.append(("held", [kv.free(kv._tracked[rid].request)
                                         for rid in held]))
                r.append_output_token_ids(more)
                new, result = attempt(kv, r, retry, whole, lookahead, delay)
                results.append(result)
            if not keep or new is None:
                kv.free(r)
        assert results[:len(results) // 2] == results[len(results) // 2:], \
            (seed, i)
        refused += results[0][1] is None
        retried += results[0][1] is None and retry is not None
        if results[0][1] is None and retry is not None:
            held = []
        if keep and results[-1][1] is not None:
            held.append(f"a{i}")
    assert Counted.lookups_handed == 0
    return Counted.handed, cut_short, refused, retried


def test_an_admission_runs_in_the_core_as_in_python():
    # A request's first allocate_slots, as the engine's scheduler makes it
    # (its lookup's blocks whole, or none, the whole-sequence gate on or
    # off; a retry after a refusal, its lookup too), runs in the core; a
    # hit cut short goes to Python. Both build the
    # same mirror and place the same blocks, refusals included.
    totals = [0, 0, 0]
    for seed in range(20):
        handed, *counts = admissions(seed)
        assert handed == counts[0], (seed, handed, counts)
        totals = [a + b for a, b in zip(totals, counts)]
    assert min(totals) > 10, totals  # cut, refused, retried


def test_an_admission_with_keys_that_do_not_convert_raises_as_before():
    for cls in (Counted, PythonOnly):
        kv = cls(config(*SPECS), max_model_len=4096, hash_block_size=16)
        admit(kv, v.Request("a", range(40)))  # the digest size learnt
        b = v.Request("b", range(40))
        b.block_hashes[1] = "not bytes"
        with pytest.raises(hkv.UsageError, match=r"keys\[1\] must be bytes"):
            kv.allocate_slots(b, 40)
        assert kv.get_block_ids("b") == ([], [], []) and kv.usage > 0


def test_the_common_prefix_is_counted_in_one_call_as_in_python():
    kv = v.KVCacheManager(config(*SPECS), max_model_len=4096,
                          hash_block_size=16)
    a, b = v.Request("a", range(64)), v.Request("b", range(70))
    admit(kv, a)
    admit(kv, b)
    assert kv.get_num_common_prefix_blocks("a") == \
        kv._get_num_common_prefix_blocks("a") == [4, 0, 0]
    for bad in ("c", ["a"]):  # holds nothing; not a key
        with pytest.raises((hkv.UsageError, TypeError)):
            kv.get_num_common_prefix_blocks(bad)
    with pytest.raises(TypeError):
        kv.get_num_common_prefix_blocks()
    off = v.KVCacheManager(config(*SPECS), max_model_len=4096,
                           hash_block_size=16, enable_caching=False)
    admit(off, v.Request("a", range(64)))
    assert off.get_num_common_prefix_blocks("a") == [0, 0, 0]


@pytest.mark.parametrize("spec", [
    v.FullAttentionSpec(block_size=32),  # a partial entry at the prompt's
    v.MambaSpec(block_size=32, mamba_cache_mode="align"),  # checkpoint
], ids=["partial_tail", "checkpoint"])
@pytest.mark.parametrize("chunks", [(40, 10), (33, 15, 2), (33, 7, 8, 2),
                                    (33, 7, 10, 1, 1)])
def test_a_prefill_in_chunks_is_never_quiet_below_the_prompt(spec, chunks):
    # With the hash unit under the block size a request has boundaries of
    # its own below its prompt (a partial entry at the prompt's last unit,
    # a recurrent state's checkpoint), which the cells do not know: each
    # chunk, and the decode step after, must change what the same call
    # made without a record changes.
    def run(with_record):
        kv = v.KVCacheManager(config(spec, num_blocks=32), max_model_len=4096,
                              hash_block_size=16)
        r = v.Request("a", list(range(50)))
        blocks, hit = kv.get_computed_blocks(r)
        seen = []
        for i, n in enumerate(chunks):
            if n == 1:
                r.append_output_token_ids(7)
            tracked = kv._tracked.get("a")
            if not with_record and tracked is not None:
                tracked.quiet = None
            new = (kv.allocate_slots(r, n, hit, blocks) if i == 0
                   else kv.allocate_slots(r, n))
            r.num_computed_tokens += n + (hit if i == 0 else 0)
            kv.new_step_starts()
            seen.append((ids(new), kv.cache.num_cached_entries,
                         kv.cache.cached_blocks_per_group(),
                         kv.cache.free_queue(),
                         kv.cache.block_table(kv._tracked["a"].id, 0)))
        return seen
    assert run(True) == run(False)


def test_a_call_the_engine_would_reject_is_rejected_as_before():
    kv = v.KVCacheManager(config(*SPECS), max_model_len=4096,
                          hash_block_size=16)
    a = v.Request("a", range(40))
    admit(kv, a)
    a.num_computed_tokens = 40
    a.append_output_token_ids(7)
    before = state(kv, "a")
    with pytest.raises(ValueError, match="must be greater than 0"):
        kv.allocate_slots(a, 0)
    with pytest.raises(hkv.UsageError, match="num_encoder_tokens must be 0"):
        kv.allocate_slots(a, 1, num_encoder_tokens=3)
    with pytest.raises(TypeError, match="unexpected keyword"):
        kv.allocate_slots(a, 1, num_tokens=1)
    with pytest.raises(TypeError, match="multiple values"):
        kv.allocate_slots(a, 1, num_new_tokens=1)
    with pytest.raises(TypeError, match="missing"):
        kv.allocate_slots(a)
    with pytest.raises(TypeError, match="positional"):
        kv.allocate_slots(a, 1, 0, None, 0, 0, False, 0, False, "more")
    with pytest.raises(hkv.UsageError, match="exceed max_model_len"):
        kv.allocate_slots(a, 5000)
    # Nothing refused changed a table, and the mirror is in step.
    assert state(kv, "a") == before
    assert kv.allocate_slots(a, 1) is not None
    assert kv._tracked["a"].mirror.num_tokens == a.num_tokens == 41


def test_a_record_is_the_cells_tuple_or_none():
    kv = v.KVCacheManager(config(*SPECS), max_model_len=4096,
                          hash_block_size=16)
    a = v.Request("a", range(40))
    admit(kv, a)
    tracked = kv._tracked["a"]
    assert tracked.quiet is None  # none while the prompt is not computed
    a.append_output_token_ids(7)
    assert kv.allocate_slots(a, 1) is not None
    record = tracked.quiet
    assert len(record) == 9 and record[0] == kv._epoch
    for bad, what in ((("x",) * 9, "tuple of 9"),
                      (("x",) + record[1:], "item 0 must be an int"),
                      (record[:8], "tuple of 9"),
                      (list(record), "tuple of 9"),
                      (record[:3] + (2 ** 70,) + record[4:], "item 3 must"),
                      (record[:2] + (1,) + record[3:], "tuple of 9")):
        with pytest.raises(hkv.UsageError, match=what):
            tracked.quiet = bad
        assert tracked.quiet == record
    tracked.quiet = None
    assert tracked.quiet is None
    # Without a record the next call is made in full, and leaves one.
    a.num_computed_tokens = 40
    a.append_output_token_ids(7)
    assert kv.allocate_slots(a, 1).get_block_ids() == ([], [], [])
    assert tracked.quiet is not None


def test_a_tracked_mirror_is_an_hkv_request():
    tracked = _hkv.VllmTracked("request", 3)
    assert (tracked.request, tracked.id, tracked.mirror) == ("request", 3, None)
    with pytest.raises(TypeError, match="mirror must be an hkv Request"):
        tracked.mirror = "not a request"
    assert tracked.mirror is None


def test_a_tracked_request_is_set_once():
    tracked = _hkv.VllmTracked("request", 3)
    with pytest.raises(AttributeError):
        tracked.request = "another"
    with pytest.raises(TypeError, match="request is set once"):
        tracked.__init__("another", 4)
    assert tracked.request == "request"


def running(kv, request):
    """A decode call of a request admitted with its whole prompt: the core
    finds its entry, and keeps it for its next calls."""
    request.num_computed_tokens = request.num_tokens
    request.append_output_token_ids(7)
    return kv.allocate_slots(request, 1)


def test_a_request_freed_and_back_is_admitted_again():
    seen = []
    for cls in (v.KVCacheManager, PythonOnly):
        kv = cls(config(*SPECS), max_model_len=4096, hash_block_size=16)
        a = v.Request("a", range(40))
        admit(kv, a)
        running(kv, a)
        first = kv._tracked["a"]
        assert kv._untrack("b") is None
        # Preempted: freed, then the same object back from nothing computed.
        kv.free(a)
        assert "a" not in kv._tracked and kv.usage == 0
        a.num_computed_tokens = 0
        hit, new = admit(kv, a)
        assert kv._tracked["a"] is not first
        assert kv._tracked["a"].id == first.id + 1
        seen.append((hit, ids(new), ids(running(kv, a)), state(kv, "a")))
        assert kv._tracked["a"].mirror.num_tokens == a.num_tokens
        # Replacing _tracked drops the entries the core kept: the next call
        # is an admission, a new entry.
        second = kv._tracked["a"]
        kv._tracked = {}
        a.num_computed_tokens = 0
        assert kv.allocate_slots(a, a.num_tokens) is not None
        assert kv._tracked["a"] is not second
    assert seen[0] == seen[1]


def test_a_manager_and_its_running_entries_are_collected():
    kv = v.KVCacheManager(config(*SPECS), max_model_len=4096,
                          hash_block_size=16)
    a = v.Request("a", range(40))
    admit(kv, a)
    running(kv, a)
    # The entry holds the request: the request goes with it.
    request = weakref.ref(a)
    a.manager = kv  # a cycle through the request
    del kv, a
    gc.collect()
    assert request() is None


def test_a_hit_is_its_ids_when_called():
    kv = v.KVCacheManager(config(*SPECS), max_model_len=4096,
                          hash_block_size=16)
    admit(kv, v.Request("a", range(64)))
    kv.free(v.Request("a", range(64)))
    b = v.Request("b", range(80))
    blocks, num_hits = kv.get_computed_blocks(b)
    hit = kv._tracked["b"].hit
    assert isinstance(hit, _hkv.VllmHit) and hit.num_tokens == num_hits == 64
    assert hit() == blocks.get_block_ids() == tuple(hit.cache_hit().blocks)
    with pytest.raises(TypeError, match="takes no arguments"):
        hit(1)
    with pytest.raises(hkv.UsageError, match=r"VllmHit\(\): cache_hit must"):
        _hkv.VllmHit(3)


def test_the_fields_the_core_reads_stay_set():
    kv = v.KVCacheManager(config(*SPECS), max_model_len=4096,
                          hash_block_size=16)
    for name in ("_tracked", "empty_kv_cache_blocks", "_new_block_ids"):
        with pytest.raises(AttributeError, match="cannot be deleted"):
            delattr(kv, name)
    bare = _hkv.VllmManagerCore()
    with pytest.raises(AttributeError, match="not set yet"):
        bare._tracked
    with pytest.raises(hkv.UsageError, match="set _tracked, empty_kv"):
        bare._bind_core(kv.cache, kv._quiet_cells, kv._zeroed,
                        kv._engine.BlocksOverIds, kv._views, kv.block_pool,
                        16)


def test_the_once_a_step_calls_are_the_cores():
    kv = v.KVCacheManager(config(*SPECS), max_model_len=4096,
                          hash_block_size=16)
    a = v.Request("a", range(40))
    admit(kv, a)
    taken = kv.take_new_block_ids()
    assert taken == [i for i in kv.get_block_ids("a")[0]]
    held = kv._new_block_ids
    assert kv.take_new_block_ids() is held == []
    assert kv._new_block_ids == [] and kv._new_block_ids is not held
    pending = kv.pending_events
    assert kv.take_events() is pending == []
    assert kv.pending_events == [] and kv.pending_events is not pending
    kv.new_step_starts()
    # Events pending (or events on): the manager's Python takes them.
    kv.pending_events.append("event")
    assert kv.take_events() == ["event"] and kv.pending_events == []
    bare = _hkv.VllmManagerCore()
    for call in (bare.new_step_starts, bare.take_new_block_ids,
                 bare.take_events):
        with pytest.raises(hkv.UsageError, match="core is not bound"):
            call()


def test_the_eviction_record_is_a_config_choice():
    # hkv.vllm turns it off (the engine has no miss causes); a cache built
    # by hand keeps it unless told.
    config = _hkv.CacheConfig()
    assert config.eviction_record == _hkv.EvictionRecord.KEPT
    config.eviction_record = _hkv.EvictionRecord.OFF
    assert config.eviction_record == _hkv.EvictionRecord.OFF


class Sneaky(v.Request):
    """A request whose token count runs Python that changes the manager."""
    hook = None

    @property
    def num_tokens(self):
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        return super().num_tokens


class Shrinking(v.Request):
    """A request whose id, read a second time, drops its block hashes (as
    an admission reads it after the hashes)."""
    reads = 0

    @property
    def request_id(self):
        self.reads += 1
        if self.reads == 2:
            del self.block_hashes[1:]
        return self._id

    @request_id.setter
    def request_id(self, value):
        self._id = value


def test_an_admission_whose_keys_shrink_mid_call_reads_none_past_them():
    kv = v.KVCacheManager(config(*SPECS), max_model_len=4096,
                          hash_block_size=16)
    admit(kv, v.Request("a", range(40)))  # the digest size learnt
    b = Shrinking("b", range(200))
    with pytest.raises(hkv.UsageError, match="has 1 block hashes"):
        kv.allocate_slots(b, 200)
    assert kv.get_block_ids("b") == ([], [], [])


def test_a_property_that_changes_the_manager_mid_call_breaks_nothing():
    kv = v.KVCacheManager(config(*SPECS), max_model_len=4096,
                          hash_block_size=16)
    a = Sneaky("a", range(40))
    admit(kv, a)
    a.num_computed_tokens = 40
    # Freed while its allocation reads its token count: the call goes on
    # with the entry and mirror it holds and is refused (the cache no longer
    # knows the request's computed tokens), holding nothing.
    a.append_output_token_ids(7)
    a.hook = lambda: kv.free(a)
    with pytest.raises(hkv.UsageError, match="beyond the 0 tokens"):
        kv.allocate_slots(a, 1)
    assert kv.usage == 0 and "a" not in kv._tracked
    # Freed while its lookup reads its token count.
    b = Sneaky("b", range(60))
    b.hook = lambda: kv.free(b)
    blocks, hit = kv.get_computed_blocks(b)
    assert kv._tracked["b"].hit.num_tokens == hit
    assert kv._tracked["b"].hit_blocks is blocks
    # Its tracked entry replaced mid-lookup by another request's.
    c, other = Sneaky("c", range(60)), v.Request("c", range(60))
    c.hook = lambda: kv.get_computed_blocks(other)
    with pytest.raises(hkv.UsageError, match="in use by another request"):
        kv.get_computed_blocks(c)
