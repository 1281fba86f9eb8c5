"""`hkv index` on what the reference engine itself publishes: the golden
streams of data/reference_events (written by
vllm_compat/make_reference_events.py from the engine's own Scheduler,
KVCacheManager, event classes, msgspec encoder and ZmqEventPublisher), in
the tree's array encoding and the later upstream map encoding, with byte
and integer hashes. Each is sent frame by frame, numbered as the engine
numbered it, to an index started with the engine's layout and key function
and no encoding flag; at each checkpoint the index must answer every
prompt as the engine's own lookup did at that point."""
import base64
import json
import pathlib

import pytest
import zmq

from test_hkv_index import Index, RawPublisher, join, matches, wait_until

STREAMS = sorted((pathlib.Path(__file__).parent / "data"
                  / "reference_events").glob("*.json"))


def test_the_four_streams_are_there():
    assert [p.stem for p in STREAMS] == [
        "tree_array_bytes", "tree_array_int", "upstream_map_bytes",
        "upstream_map_int"]


@pytest.mark.parametrize("path", STREAMS, ids=[p.stem for p in STREAMS])
def test_hkv_index_answers_the_reference_engines_stream_as_its_lookup(path):
    stream = json.loads(path.read_text())
    layout = ["--groups", stream["groups"], "--hash-unit",
              str(stream["hash_unit"]), "--key-function",
              stream["key_function"], "--key-seed", stream["key_seed"]]
    context = zmq.Context()
    raw = RawPublisher(context)
    index = None
    try:
        index = Index([raw.endpoint], layout)
        # Empty batches until the subscription holds, then the engine's
        # frames numbered from there (a publisher's numbers only grow).
        join(index, 0, raw.send)
        base = raw.seq
        joined = index.value("hkv_index_batches_total", 0)
        sent = 0
        frames = [base64.b64decode(f) for f in stream["frames"]]
        seen_nonzero = False
        for checkpoint in stream["checkpoints"]:
            while sent < checkpoint["frames"]:
                raw.send(payload=frames[sent], seq=base + sent)
                sent += 1
            wait_until(lambda: index.value("hkv_index_batches_total", 0) ==
                       joined + sent, f"{path.stem}: frame {sent}")
            answers = [matches(index, q)[0] for q in stream["queries"]]
            assert answers == checkpoint["answers"], (
                f"{path.stem} after {sent} frames")
            seen_nonzero |= any(a["hybrid_tokens"] > 0 for a in answers)
        assert seen_nonzero  # the stream exercised real hits
        assert index.value("hkv_index_rejected_batches_total", 0) == 0
        assert index.value("hkv_index_gaps_total", 0) <= 1  # the join's
    finally:
        if index is not None:
            index.stop()
        raw.socket.close(0)
        context.term()
