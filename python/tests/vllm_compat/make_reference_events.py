"""Writes the golden KV event streams of python/tests/data/reference_events:
what the reference engine itself publishes, and what its lookup answers.

Each stream is the engine's own Scheduler and KVCacheManager (a hybrid
model: full attention, a sliding window and aligned recurrent state, block
size 16, a small pool that evicts) serving requests that share prefixes,
with a prefix-cache reset halfway, publishing through the engine's own
ZmqEventPublisher: its event classes, its msgspec encoder, its sequence
numbers. The frames are read off a SUB socket as any subscriber reads them.
At checkpoints the engine's own lookup is recorded for a set of prompts:
`get_computed_blocks` (every group resumes: hybrid_tokens) and the longest
chain of the prompt's full-attention blocks in the engine's block pool
(attention_tokens).

Four streams: the reference tree's encoding (events and batch as msgpack
arrays, msgspec's array_like) and the later upstream one (both maps: the
upstream engine dropped array_like from EventBatch and KVCacheEvent, its
classes otherwise the same; made here by loading the tree's
kv_events.py without array_like), each with byte hashes and with the
engine's default 64-bit integer hashes (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES),
under the engine's sha256_cbor and xxhash_cbor key functions.

It needs msgspec, which Debian 12 does not package: build it from its
source (one C file) and put it on PYTHONPATH, e.g.

    gcc -O1 -shared -fPIC $(python3-config --includes) \\
        msgspec/src/msgspec/_core.c -o msgspec/src/msgspec/_core$(\\
        python3-config --extension-suffix)
    PYTHONPATH=msgspec/src:python/tests /usr/bin/python3 \\
        -m vllm_compat.make_reference_events

(plus msgspec/_version.py with a __version__ line). Run from the
repository root; it rewrites the four files.
"""
import argparse
import base64
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

OUT = (pathlib.Path(__file__).resolve().parents[1] / "data"
       / "reference_events")
BLOCK = 16
WINDOW = 2 * BLOCK + 1
NUM_BLOCKS = 60  # small: later requests evict earlier prefixes
GROUPS = f"full:{BLOCK},sliding:{BLOCK}:window={WINDOW},recurrent:{BLOCK}"
SEED = "0"  # PYTHONHASHSEED: the chain's seed (hkv index --key-seed)

STREAMS = {
    "tree_array_bytes": ("array", "bytes", "sha256_cbor"),
    "tree_array_int": ("array", "int", "xxhash_cbor"),
    "upstream_map_bytes": ("map", "bytes", "xxhash_cbor"),
    "upstream_map_int": ("map", "int", "sha256_cbor"),
}


def prompts():
    """Requests sharing prefixes (two families, a common system prefix),
    long enough to span chunks, and unrelated ones that evict."""
    system = list(range(100, 180))
    a = system + list(range(1000, 1100))
    b = system + list(range(2000, 2070))
    return [
        ("a0", a, 4), ("a1", a + list(range(1100, 1160)), 3),
        ("b0", b, 2), ("x0", list(range(30000, 30300)), 2),
        ("a2", a[:120] + list(range(3000, 3050)), 2),
        ("x1", list(range(31000, 31400)), 2),
        ("b1", b + list(range(2070, 2130)), 3),
    ]


def queries():
    system = list(range(100, 180))
    a = system + list(range(1000, 1100))
    b = system + list(range(2000, 2070))
    return [a + [7] * 20, a + list(range(1100, 1160)) + [8], b + [9] * 40,
            system + [5] * 30, list(range(30000, 30300)) + [1],
            list(range(31000, 31400)), b + list(range(2070, 2130)) + [2]]


def _load_engine(encoding):
    from vllm_compat import reference
    tree, reason = reference.load()
    if tree is None:
        sys.exit(reason)
    import msgspec
    if not hasattr(msgspec.msgpack, "Encoder"):
        sys.exit("needs the real msgspec on PYTHONPATH (see the docstring)")
    if encoding == "map":
        import importlib.util
        path = tree / "vllm" / "distributed" / "kv_events.py"
        source = path.read_text()
        dropped = source.replace("    array_like=True,  # type: ignore"
                                 "[call-arg]\n", "")
        assert source.count("array_like=True") == 2, "the tree changed"
        assert "array_like" not in dropped
        spec = importlib.util.spec_from_loader(
            "vllm.distributed.kv_events", loader=None, origin=str(path))
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        exec(compile(dropped, str(path), "exec"), module.__dict__)
    return tree


def _scheduler(endpoint, key_function):
    import torch
    from vllm.config import (CacheConfig, KVEventsConfig, ModelConfig,
                             SchedulerConfig, VllmConfig)
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.kv_cache_interface import (FullAttentionSpec,
                                            KVCacheConfig, KVCacheGroupSpec,
                                            MambaSpec, SlidingWindowSpec)
    from vllm.v1.structured_output import StructuredOutputManager
    common = dict(block_size=BLOCK, num_kv_heads=1, head_size=1,
                  dtype=torch.float32)
    specs = [FullAttentionSpec(**common),
             SlidingWindowSpec(**common, sliding_window=WINDOW),
             MambaSpec(block_size=BLOCK, shapes=((1,),),
                       dtypes=(torch.float32,), mamba_cache_mode="align")]
    model = ModelConfig(model="facebook/opt-125m", dtype="float16", seed=42,
                        max_model_len=1024)
    scheduler_config = SchedulerConfig(
        max_num_seqs=4, max_num_batched_tokens=64, max_model_len=1024,
        enable_chunked_prefill=True, is_encoder_decoder=False)
    cache_config = CacheConfig(block_size=BLOCK, gpu_memory_utilization=0.9,
                               cache_dtype="auto", enable_prefix_caching=True,
                               mamba_cache_mode="align",
                               prefix_caching_hash_algo=key_function)
    cache_config.num_gpu_blocks = NUM_BLOCKS
    events = KVEventsConfig(enable_kv_cache_events=True, publisher="zmq",
                            endpoint=endpoint, topic="")
    vllm_config = VllmConfig(scheduler_config=scheduler_config,
                             model_config=model, cache_config=cache_config,
                             kv_events_config=events)
    kv_cache_config = KVCacheConfig(
        num_blocks=NUM_BLOCKS, kv_cache_tensors=[],
        kv_cache_groups=[KVCacheGroupSpec([f"layer{i}"], s)
                         for i, s in enumerate(specs)])
    return Scheduler(vllm_config=vllm_config, kv_cache_config=kv_cache_config,
                     block_size=BLOCK, log_stats=False,
                     structured_output_manager=StructuredOutputManager(
                         vllm_config))


def _lookup(scheduler, hash_fn, tokens):
    """The engine's answer for a prompt: hybrid from get_computed_blocks,
    full attention's chain from its block pool (as the engine looks up: at
    most all but the last token)."""
    from vllm.sampling_params import SamplingParams
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher
    from vllm.v1.request import Request
    params = SamplingParams(max_tokens=1)
    request = Request(request_id="lookup", prompt_token_ids=list(tokens),
                      sampling_params=params, pooling_params=None,
                      block_hasher=get_request_block_hasher(BLOCK, hash_fn))
    manager = scheduler.kv_cache_manager
    _, hybrid = manager.get_computed_blocks(request)
    pool = manager.block_pool
    chain = 0
    for block_hash in request.block_hashes[:(len(tokens) - 1) // BLOCK]:
        if pool.get_cached_block(block_hash, [0]) is None:
            break
        chain += BLOCK
    return {"hybrid_tokens": hybrid, "attention_tokens": chain}


def _run(name):
    encoding, hashes, key_function = STREAMS[name]
    os.environ["PYTHONHASHSEED"] = SEED
    os.environ["VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES"] = (
        "1" if hashes == "int" else "0")
    _load_engine(encoding)
    import zmq
    from vllm.sampling_params import SamplingParams
    from vllm.utils.hashing import get_hash_fn_by_name
    from vllm.v1.core.kv_cache_utils import (get_request_block_hasher,
                                             init_none_hash)
    from vllm.v1.outputs import ModelRunnerOutput as RunnerOutput
    from vllm.v1.request import Request
    hash_fn = get_hash_fn_by_name(key_function)
    init_none_hash(hash_fn)
    folder = tempfile.mkdtemp()
    endpoint = f"ipc://{folder}/events"
    context = zmq.Context.instance()
    sub = context.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    scheduler = _scheduler(endpoint, key_function)
    published = [0]
    publish = scheduler.kv_event_publisher.publish

    def counted(batch):
        published[0] += 1
        publish(batch)
    scheduler.kv_event_publisher.publish = counted
    sub.connect(endpoint)
    time.sleep(0.5)  # the subscription reaches the publisher
    frames, checkpoints = [], []

    def drain():
        deadline = time.monotonic() + 10
        while len(frames) < published[0]:
            assert time.monotonic() < deadline, "frames lost"
            if sub.poll(100):
                topic, seq, payload = sub.recv_multipart()
                assert int.from_bytes(seq, "big") == len(frames)
                frames.append(base64.b64encode(payload).decode())

    def checkpoint():
        drain()
        checkpoints.append({
            "frames": len(frames),
            "answers": [_lookup(scheduler, hash_fn, q) for q in queries()]})

    def serve(pending, checkpoint_at):
        step = 0
        while pending or scheduler.has_unfinished_requests():
            if pending and step % 3 == 0:
                rid, tokens, max_tokens = pending.pop(0)
                params = SamplingParams(ignore_eos=True,
                                        max_tokens=max_tokens)
                scheduler.add_request(Request(
                    request_id=rid, prompt_token_ids=tokens,
                    sampling_params=params, pooling_params=None,
                    block_hasher=get_request_block_hasher(BLOCK, hash_fn)))
            out = scheduler.schedule()
            ids, sampled = [], []
            for rid in out.num_scheduled_tokens:
                request = scheduler.requests[rid]
                ids.append(rid)
                done = request.num_computed_tokens >= request.num_tokens
                sampled.append([11 + step % 50] if done else [])
            scheduler.update_from_output(out, RunnerOutput(
                req_ids=ids,
                req_id_to_index={r: i for i, r in enumerate(ids)},
                sampled_token_ids=sampled, logprobs=None,
                prompt_logprobs_dict={}, pooler_output=[]))
            step += 1
            if step in checkpoint_at:
                checkpoint()
        checkpoint()

    first, then = prompts()[:4], prompts()[4:] + prompts()[:2]
    serve(first, {8})
    # Idle, so the reset succeeds; its AllBlocksCleared goes out with the
    # next step's events.
    assert scheduler.reset_prefix_cache()
    serve(then, {2, 10})
    scheduler.shutdown()
    sub.close(0)
    return {
        "source": ("the reference engine's Scheduler, KVCacheManager and "
                   "ZmqEventPublisher (vllm 28be48fa" +
                   (", kv_events.py without array_like as upstream"
                    if encoding == "map" else "") + "), msgspec " +
                   __import__("msgspec").__version__),
        "encoding": encoding, "hashes": hashes,
        "key_function": key_function, "key_seed": SEED, "groups": GROUPS,
        "hash_unit": BLOCK, "frames": frames, "queries": queries(),
        "checkpoints": checkpoints}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stream", choices=sorted(STREAMS),
                        help="write this stream only (to OUT/NAME.json)")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if args.stream:
        path = OUT / f"{args.stream}.json"
        path.write_text(json.dumps(_run(args.stream)) + "\n")
        return
    for name in STREAMS:  # one process each: the classes differ
        done = subprocess.run(
            [sys.executable, "-m", "vllm_compat.make_reference_events",
             "--stream", name], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            sys.exit(f"{name}: {done.stdout[-2000:]}{done.stderr[-2000:]}")
        path = OUT / f"{name}.json"
        stream = json.loads(path.read_text())
        print(f"{path}: {len(stream['frames'])} frames, "
              f"{len(stream['checkpoints'])} checkpoints")


if __name__ == "__main__":
    main()
