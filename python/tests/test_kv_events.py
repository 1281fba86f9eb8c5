"""KV events on the wire (docs/events.md), checked by an independent
subscriber: it decodes every batch by the spec's field list alone (Debian's
python3-zmq and python3-msgpack, no hkv code), mirrors the cached keys per
group from BlockStored / BlockRemoved / AllBlocksCleared, and after a replay
of the conversation trace holds exactly the manager's keys. A batch it
pretends to lose is detected from the sequence numbers and fetched again
through the replay socket."""
import collections
import threading

import msgpack
import pytest
import zmq

import hkv
from conftest import ROOT

TRACE = ROOT / "data" / "traces" / "mooncake_conversation_trace.jsonl"
LIMIT = 1500
TOPIC = b"kv@test"
END = (-1).to_bytes(8, "big", signed=True)

# Spec §6.1, in order: a tagged array, fields after the tag.
FIELDS = {
    "BlockStored": ["block_hashes", "parent_block_hash", "token_ids",
                    "block_size", "lora_id", "medium", "lora_name",
                    "extra_keys", "group_idx", "kv_cache_spec_kind",
                    "kv_cache_spec_sliding_window", "locality", "ownership",
                    "session_id", "skipped_parent_block_hash",
                    "skipped_token_ids", "skipped_extra_keys"],
    "BlockRemoved": ["block_hashes", "medium", "group_idx", "locality",
                     "ownership"],
    "AllBlocksCleared": [],
}


def decode(payload):
    """[ts, events, data_parallel_rank] -> (ts, [(tag, fields)], rank)."""
    ts, events, rank = msgpack.unpackb(payload, raw=False)
    decoded = []
    for event in events:
        tag, *values = event
        names = FIELDS[tag]
        assert len(values) <= len(names), f"{tag} has too many fields"
        decoded.append((tag, dict(zip(names, values))))
    return ts, decoded, rank


class Mirror:
    """The cached keys per group, counted once per block that holds them."""

    def __init__(self):
        self.keys = collections.Counter()

    def apply(self, events):
        for tag, fields in events:
            if tag == "AllBlocksCleared":
                self.keys.clear()
                continue
            group = fields["group_idx"]
            for digest in fields["block_hashes"]:
                key = (group, digest)
                if tag == "BlockStored":
                    self.keys[key] += 1
                    continue
                assert self.keys[key] > 0, "removed a key never stored"
                self.keys[key] -= 1
                if not self.keys[key]:
                    del self.keys[key]


class Subscriber:
    """SUB for the stream, DEALER for replays; repairs gaps it sees."""

    def __init__(self, context, publisher, lose=None):
        self.sub = context.socket(zmq.SUB)
        self.sub.setsockopt(zmq.RCVHWM, 0)  # keep everything sent
        self.sub.setsockopt(zmq.SUBSCRIBE, TOPIC)
        self.sub.setsockopt(zmq.RCVTIMEO, 5000)
        self.sub.connect(publisher.endpoint)
        self.replay = context.socket(zmq.DEALER)
        self.replay.setsockopt(zmq.RCVTIMEO, 5000)
        self.replay.connect(publisher.replay_endpoint)
        self.mirror = Mirror()
        self.next_seq = None
        self.lose = lose  # a sequence number to drop, as if lost
        self.repaired = []

    def receive(self):
        topic, seq, payload = self.sub.recv_multipart()
        assert topic == TOPIC
        return int.from_bytes(seq, "big"), payload

    def handle(self, seq, payload):
        if seq == self.lose:
            self.lose = None
            return
        if self.next_seq is not None and seq > self.next_seq:
            self.repair(self.next_seq, seq)
        if self.next_seq is None or seq >= self.next_seq:
            self.mirror.apply(decode(payload)[1])
            self.next_seq = seq + 1

    def repair(self, first, upto):
        self.replay.send_multipart([b"", first.to_bytes(8, "big")])
        while True:
            _, seq, payload = self.replay.recv_multipart()
            if seq == END:
                break
            number = int.from_bytes(seq, "big")
            if first <= number < upto:
                self.mirror.apply(decode(payload)[1])
                self.repaired.append(number)
        assert self.repaired[-1] == upto - 1, "replay lacks the lost batches"


def join(publisher, subscriber):
    """Probes with empty batches until the subscription is live."""
    for _ in range(500):
        publisher.publish([], 0.0)
        if subscriber.sub.poll(10):
            seq, payload = subscriber.receive()
            subscriber.handle(seq, payload)
            return
    pytest.fail("the subscription never reached the publisher")


def drive(kv, publisher, trace):
    """Each request: look up, prefill in chunks, commit, free; one batch
    of events per step, stamped with the step number."""
    step = 0
    for i, t in enumerate(trace):
        r = kv.make_request(i, hkv.mooncake_tokens(t))
        _, done = kv.get_computed_blocks(r)
        while done < r.num_tokens:
            n = kv.split_prefill(r, min(8192, r.num_tokens - done)) or 1
            if kv.allocate_slots(r, n) is None:
                break
            kv.commit(r, done + n)
            kv.finish_step()
            done += n
            step += 1
            publisher.publish(kv.take_events(), float(step))
        kv.free(r)  # also when the pool was short: nothing leaks
        step += 1
        publisher.publish(kv.take_events(), float(step))
    return step


@pytest.mark.parametrize("hashes", ["bytes", "low64"])
def test_a_subscriber_rebuilds_the_cached_keys(hashes):
    trace = hkv.read_mooncake_trace(str(TRACE), limit=LIMIT)
    kv = hkv.KVCacheManager(groups="full:512,recurrent:512", num_blocks=6000,
                            key_function="xxh3_128_cbor",
                            enable_kv_cache_events=True)
    publisher = hkv.EventPublisher(
        "tcp://127.0.0.1:*", replay_endpoint="tcp://127.0.0.1:*",
        topic=TOPIC.decode(), key_function="xxh3_128_cbor", hashes=hashes,
        replay_batches=100_000)
    context = zmq.Context()
    subscriber = Subscriber(context, publisher)
    try:
        join(publisher, subscriber)
        # The 100th batch after the probes is dropped on arrival.
        lost = subscriber.next_seq + 100
        subscriber.lose = lost
        done = threading.Event()
        received = []
        errors = []

        def listen():
            try:
                while not done.is_set() or subscriber.sub.poll(200):
                    if subscriber.sub.poll(50):
                        seq, payload = subscriber.receive()
                        subscriber.handle(seq, payload)
                        received.append(seq)
            except Exception as error:  # raised again in the test's thread
                errors.append(error)

        listener = threading.Thread(target=listen)
        listener.start()
        drive(kv, publisher, trace)
        assert publisher.flush(30.0)
        done.set()
        listener.join(60)
        assert not listener.is_alive()
        if errors:
            raise errors[0]
        counters = publisher.counters
        assert counters.dropped == 0 and counters.socket_errors == 0
        assert received[-1] == counters.published - 1
        assert subscriber.repaired == [lost]
        assert counters.replay_requests == 1

        def wire(digest):
            # The digest as sent: 16 bytes (XXH3-128), or their low 64 bits.
            raw = digest[:16]
            return raw if hashes == "bytes" else int.from_bytes(raw[8:], "big")

        expected = collections.Counter(
            (group, wire(digest)) for group, digest in kv.cache.cached_keys())
        assert expected, "the replay cached nothing"
        assert kv.cache.counters.evicted_blocks > 0, "nothing was evicted"
        assert subscriber.mirror.keys == expected
    finally:
        subscriber.sub.close(0)
        subscriber.replay.close(0)
        context.term()
        del publisher


def test_bad_publisher_options_are_named():
    with pytest.raises(hkv.Error, match="queue_batches 0 is outside"):
        hkv.EventPublisher("tcp://127.0.0.1:*", queue_batches=0)
    with pytest.raises(hkv.Error, match='cannot bind the KV event endpoint '
                                        '"nonsense"'):
        hkv.EventPublisher("nonsense")
    with pytest.raises(hkv.UsageError, match="hashes"):
        hkv.EventPublisher("tcp://127.0.0.1:*", hashes="hex")


def test_hkv_simulate_publishes_its_run():
    """`hkv simulate --kv-events`: a subscriber that joins after the run
    replays every batch from 0 and holds one key per cached block of the
    report (hash unit = block: no partial entries)."""
    import json
    import subprocess

    from conftest import cli

    proc = subprocess.Popen(
        [str(cli()), "simulate", "--workload", f"mooncake:{TRACE}",
         "--limit", "100", "--groups", "full:512,recurrent:512",
         "--hash-unit", "512", "--num-blocks", "3000", "--json",
         "--kv-events", "tcp://127.0.0.1:*",
         "--kv-events-replay", "tcp://127.0.0.1:*",
         "--kv-events-linger", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    context = zmq.Context()
    dealer = context.socket(zmq.DEALER)
    dealer.setsockopt(zmq.RCVTIMEO, 5000)
    try:
        first = proc.stderr.readline()
        assert "KV events on tcp://127.0.0.1:" in first, first
        replay = first.split("replay on ")[1].rstrip(")\n")
        published = proc.stderr.readline()
        assert "KV event batches published, 0 dropped" in published
        batches = int(published.split("hkv simulate: ")[1].split()[0])
        dealer.connect(replay)
        dealer.send_multipart([b"", (0).to_bytes(8, "big")])
        mirror = Mirror()
        seqs = []
        while True:
            _, seq, payload = dealer.recv_multipart()
            if seq == END:
                break
            seqs.append(int.from_bytes(seq, "big"))
            mirror.apply(decode(payload)[1])
        assert seqs == list(range(batches))
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0
        table = json.loads(out)["table"]
        per_group = collections.Counter(g for g, _ in mirror.keys.elements())
        assert per_group[0] == table["cached_blocks_full"] > 0
        assert per_group[1] == table["cached_blocks_recurrent"] > 0
        assert table["evicted_blocks"] > 0
    finally:
        proc.kill()
        proc.wait()
        dealer.close(0)
        context.term()
