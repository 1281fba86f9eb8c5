"""`hkv index` (docs/cluster.md) against the managers it
mirrors: two hybrid engines (full attention + a recurrent group) publish
their KV events, a third "engine" is a raw PUB socket sending bad input, and
the index's answers over HTTP and ZeroMQ must equal each manager's own
lookup: hybrid_tokens its num_tokens, attention_tokens its chain_tokens.

Loopback only; every wait is bounded and the service is always killed."""
import gc
import json
import queue
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import msgpack
import pytest
import zmq

import hkv
from conftest import cli

GROUPS = "full:16,recurrent:16"
LAYOUT = ["--groups", GROUPS, "--hash-unit", "16", "--key-function",
          "sha256_cbor"]
WAIT_S = 20.0
# Instance 0 computes PROMPT in two chunks: its recurrent state is kept at
# the first chunk's end (64) only, while full attention caches 12 blocks.
PROMPT = list(range(1000, 1200))
QUERY = PROMPT + [7] * 50
# Instance 1 shares QUERY's first 128 tokens, its state at 128.
OTHER = PROMPT[:128] + list(range(5000, 5072))
# After its restart, instance 1 holds QUERY's first 96 tokens.
AFTER_RESTART = QUERY[:96] + list(range(6000, 6040))

METRICS = [
    "hkv_index_queries_total", "hkv_index_bad_queries_total",
    "hkv_index_query_seconds_bucket", "hkv_index_query_seconds_sum",
    "hkv_index_query_seconds_count", "hkv_index_batches_total",
    "hkv_index_resident_keys", "hkv_index_stored_keys_total",
    "hkv_index_removed_keys_total", "hkv_index_evicted_keys_total",
    "hkv_index_gaps_total", "hkv_index_replays_total",
    "hkv_index_restarts_total", "hkv_index_rejected_batches_total",
    "hkv_index_bad_messages_total", "hkv_index_memory_bytes",
    "hkv_index_prefix_cache_queries_total",
    "hkv_index_prefix_cache_hits_total"]


def wait_until(predicate, what, timeout=WAIT_S, every=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(every)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


class Engine:
    """A KVCacheManager whose events go out on an hkv.EventPublisher."""

    def __init__(self, endpoint="tcp://127.0.0.1:*",
                 replay="tcp://127.0.0.1:*"):
        self.kv = hkv.KVCacheManager(groups=GROUPS, num_blocks=400,
                                     key_function="sha256_cbor",
                                     enable_kv_cache_events=True)
        self.publisher = bind_publisher(endpoint, replay)
        self.steps = 0

    def publish(self):
        self.steps += 1
        self.publisher.publish(self.kv.take_events(), float(self.steps))

    def prefill(self, request_id, tokens, chunks):
        """Computes the prompt chunk by chunk, one batch per step, then
        frees it (its blocks stay cached)."""
        kv = self.kv
        r = kv.make_request(request_id, tokens)
        _, done = kv.get_computed_blocks(r)
        assert done == 0
        for n in chunks:
            assert kv.allocate_slots(r, n) is not None
            kv.commit(r, done + n)
            kv.finish_step()
            done += n
            self.publish()
        assert done == len(tokens)
        kv.free(r)
        self.publish()
        assert self.publisher.flush(10.0)

    def lookup(self, tokens):
        hit = self.kv.cache.lookup(self.kv.make_request("lookup", tokens))
        return {"hybrid_tokens": hit.num_tokens,
                "attention_tokens": hit.chain_tokens}


def bind_publisher(endpoint, replay):
    """Binds, retrying a while when the port is still held by a closed
    publisher (a restart on the same endpoints)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            return hkv.EventPublisher(endpoint, replay_endpoint=replay,
                                      key_function="sha256_cbor")
        except hkv.Error:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


class RawPublisher:
    """Instance 2: a PUB socket sending whatever the test wants."""

    def __init__(self, context):
        self.socket = context.socket(zmq.PUB)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.bind("tcp://127.0.0.1:*")
        self.endpoint = self.socket.getsockopt_string(zmq.LAST_ENDPOINT)
        self.seq = 0

    def send(self, payload=None, seq=None, frames=None):
        if frames is None:
            seq = self.seq if seq is None else seq
            if payload is None:
                payload = msgpack.packb([0.0, [], 0])  # an empty batch
            frames = [b"", seq.to_bytes(8, "big"), payload]
            self.seq = seq + 1
        self.socket.send_multipart(frames)


class Index:
    """The `hkv index` subprocess, its stderr read on a thread."""

    def __init__(self, instances, layout=LAYOUT):
        args = [str(cli()), "index", *layout, "--http", "127.0.0.1:0",
                "--zmq-bind", "tcp://127.0.0.1:*", "--run-seconds", "300"]
        for instance in instances:
            args += ["--instance", instance]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.log = []
        threading.Thread(target=self._read, daemon=True).start()
        self.http = self._address("http on ")
        self.zmq = self._address("zmq on ")

    def _read(self):
        for line in self.proc.stderr:
            self.lines.put(line)

    def _address(self, marker):
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                assert self.proc.poll() is None, "\n".join(self.log)
                continue
            self.log.append(line)
            if f"hkv index: {marker}" in line:
                return line.split(marker)[1].strip()
        pytest.fail(f"hkv index never said '{marker}': {self.log}")

    def post(self, body, content_type="application/json"):
        """(status, JSON answer) of POST /query."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://{self.http}/query", data=data, method="POST",
            headers={"Content-Type": content_type})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def metrics(self):
        with urllib.request.urlopen(f"http://{self.http}/metrics",
                                    timeout=10) as response:
            return response.headers["Content-Type"], response.read().decode()

    def value(self, name, instance=None):
        labels = "" if instance is None else f'{{instance="{instance}"}}'
        for line in self.metrics()[1].splitlines():
            if line.startswith(name + labels + " "):
                return float(line.split()[-1])
        raise AssertionError(f"no {name}{labels} in /metrics")

    def stop(self):
        self.proc.kill()
        self.proc.wait(timeout=10)


def matches(index, tokens):
    status, answer = index.post({"tokens": tokens})
    assert status == 200, answer
    return [{k: m[k] for k in ("hybrid_tokens", "attention_tokens")}
            for m in answer["instances"]]


# How long the index's batch count must hold still before join counts the
# batches it published as all applied.
SETTLE_S = 0.5


def join(index, instance, publish):
    """Publishes empty batches until the index has applied one, then waits
    until it has applied every one still in flight (its count holds still
    for SETTLE_S; none is published meanwhile), so that a count read after
    join covers every batch join sent: on a busy machine several are in
    flight when the first is applied, and a count read at once missed them
    (a later wait for that count plus the batches sent after it then never
    ended)."""
    batches = "hkv_index_batches_total"
    wait_until(lambda: publish() or index.value(batches, instance) > 0,
               f"instance {instance}'s subscription", every=0.05)
    count = index.value(batches, instance)
    since = time.monotonic()
    deadline = since + WAIT_S
    while time.monotonic() - since < SETTLE_S:
        if time.monotonic() > deadline:
            pytest.fail(f"instance {instance}'s batch count never held still")
        time.sleep(0.02)
        now = index.value(batches, instance)
        if now != count:
            count, since = now, time.monotonic()


def test_hkv_index_answers_as_each_manager_looks_up():
    context = zmq.Context()
    engines = [Engine(), Engine()]
    raw = RawPublisher(context)
    index = None
    try:
        # Instance 0 publishes before the index runs: it learns those
        # batches only through the replay socket.
        engines[0].prefill("a", PROMPT, [64, 136])
        index = Index([f"{e.publisher.endpoint},{e.publisher.replay_endpoint}"
                       for e in engines] + [raw.endpoint])
        for i, engine in enumerate(engines):
            join(index, i, engine.publish)
        join(index, 2, raw.send)
        engines[1].prefill("c", OTHER, [128, 72])
        # Instance 1's sequence runs far ahead, so that after its restart
        # the index sees a number below it (check_restart).
        for _ in range(200):
            engines[1].publish()
        assert engines[1].publisher.flush(10.0)
        for i, engine in enumerate(engines):
            wait_until(lambda i=i, e=engine:
                       index.value("hkv_index_batches_total", i) ==
                       e.publisher.counters.published,
                       f"instance {i}'s batches")
        assert index.value("hkv_index_replays_total", 0) >= 1
        check_answers(index, engines)
        check_metrics(index)
        check_bad_input(index, raw, engines)
        check_restart(index, engines)
    finally:
        if index is not None:
            index.stop()
        raw.socket.close(0)
        context.term()


def check_answers(index, engines):
    expected = [e.lookup(QUERY) for e in engines]
    assert expected[0]["hybrid_tokens"] != expected[0]["attention_tokens"]
    assert expected[0] == {"hybrid_tokens": 64, "attention_tokens": 192}
    assert expected[1] == {"hybrid_tokens": 128, "attention_tokens": 128}
    empty = {"hybrid_tokens": 0, "attention_tokens": 0}
    assert matches(index, QUERY) == expected + [empty]
    status, answer = index.post({"tokens": QUERY})
    assert answer["best"] == 1  # attention alone would pick instance 0
    assert answer["instances"][2]["endpoint"].startswith("tcp://127.0.0.1:")
    # The same by keys, and on the REP socket.
    keys = engines[0].kv.make_request("k", QUERY).keys
    by_keys = {"keys": [k.hex() for k in keys], "num_tokens": len(QUERY)}
    assert index.post(by_keys) == (200, answer)
    req = zmq.Context.instance().socket(zmq.REQ)
    req.setsockopt(zmq.LINGER, 0)
    req.setsockopt(zmq.RCVTIMEO, 10_000)
    try:
        req.connect(index.zmq)
        req.send(json.dumps({"tokens": QUERY}).encode())
        assert json.loads(req.recv()) == answer
        req.send(b'{"tokens": [-1]}')
        assert "negative" in json.loads(req.recv())["error"]
    finally:
        req.close(0)


def check_metrics(index):
    content_type, text = index.metrics()
    assert "version=0.0.4" in content_type
    for name in METRICS:
        assert f"\n{name}" in text, name
    assert "vllm:prefix_cache_queries" in text
    assert "vllm:prefix_cache_hits" in text
    assert index.value("hkv_index_prefix_cache_queries_total") >= len(QUERY)
    assert index.value("hkv_index_prefix_cache_hits_total") >= 128
    assert 'hkv_index_resident_keys{instance="0",group="1"} ' in text


def check_bad_input(index, raw, engines):
    bad_queries = index.value("hkv_index_bad_queries_total")
    status, answer = index.post({"keys": ["ab" * 31], "num_tokens": 16})
    assert status == 400 and "want 64 hex digits" in answer["error"]
    assert index.value("hkv_index_bad_queries_total") == bad_queries + 1
    for body, message in [(b"{", "malformed JSON"),
                          ({"tokens": [1.5]}, "not an integer"),
                          (b'{"tokens":[' + b"1," * 2**24 + b"1]}",
                           "more than 16777216 tokens"),
                          ({"keys": []}, "num_tokens")]:
        status, answer = index.post(body)
        assert status == 400 and message in answer["error"], answer
    # The HTTP library's own limit on form data: refused, counted.
    bad_queries = index.value("hkv_index_bad_queries_total")
    status, answer = index.post(b" " * 9000,
                                "application/x-www-form-urlencoded")
    assert status == 413 and "8 KiB" in answer["error"]
    assert index.value("hkv_index_bad_queries_total") == bad_queries + 1
    # Instance 2: an unreadable batch, two malformed messages, a gap.
    raw.send(payload=b"\xc1")
    wait_until(lambda: index.value("hkv_index_rejected_batches_total", 2) == 1,
               "the rejected batch")
    raw.send(frames=[b"", b"\x00" * 8])
    raw.send(frames=[b"", b"\x00" * 7, msgpack.packb([0.0, [], 0])])
    wait_until(lambda: index.value("hkv_index_bad_messages_total", 2) == 2,
               "the malformed messages")
    gaps = index.value("hkv_index_gaps_total", 2)
    raw.send(seq=raw.seq + 5)
    wait_until(lambda: index.value("hkv_index_gaps_total", 2) == gaps + 1,
               "the gap")
    assert index.proc.poll() is None
    assert matches(index, QUERY)[:2] == [e.lookup(QUERY) for e in engines]


def check_restart(index, engines):
    """Instance 1's engine restarts on the same endpoints: its sequence
    numbers start again at 0 and its old keys must not be claimed. The
    index sees the old connection drop (and forgets the instance), or,
    should the drop go unseen, the numbers going back (a restart)."""
    endpoint = engines[1].publisher.endpoint
    replay = engines[1].publisher.replay_endpoint
    engines[1].publisher = None
    gc.collect()
    engines[1] = Engine(endpoint, replay)
    wait_until(lambda: engines[1].publish() or
               index.value("hkv_index_restarts_total", 1) +
               index.value("hkv_index_link_drops_total", 1) >= 1,
               "the restart", every=0.02)
    engines[1].prefill("d", AFTER_RESTART, [96, 40])
    expected = [e.lookup(QUERY) for e in engines] + [
        {"hybrid_tokens": 0, "attention_tokens": 0}]
    assert expected[1] == {"hybrid_tokens": 96, "attention_tokens": 96}
    wait_until(lambda: matches(index, QUERY) == expected,
               "the answers after the restart")
    wait_until(lambda: index.value("hkv_index_batches_total", 0) ==
               engines[0].publisher.counters.published, "instance 0")
    assert index.proc.poll() is None


def test_hkv_index_stops_cleanly_on_sigterm():
    index = Index(["tcp://127.0.0.1:1"])  # nobody there: no error
    try:
        assert index.post({"tokens": [1, 2, 3]})[0] == 200
        index.proc.terminate()
        assert index.proc.wait(timeout=10) == 0
    finally:
        index.stop()


def test_hkv_index_stops_cleanly_on_sigterm_as_soon_as_it_serves():
    """The handlers are in place before the service announces itself: a
    SIGTERM sent the moment "http on" appears stops it with status 0 (it
    once died of the default action here, 1 try in 20)."""
    for _ in range(20):
        index = Index(["tcp://127.0.0.1:1"])
        try:
            index.proc.terminate()
            assert index.proc.wait(timeout=10) == 0, index.log
        finally:
            index.stop()


def captured(context, engine, action):
    """The batch payloads `engine` publishes while `action` runs."""
    sub = context.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(engine.publisher.endpoint)
    try:
        wait_until(lambda: engine.publish() or sub.poll(20) != 0,
                   "the capturing subscription", every=0.05)
        while sub.poll(50):
            sub.recv_multipart()
        action()
        payloads = []
        while sub.poll(500):
            payloads.append(sub.recv_multipart()[2])
        return payloads
    finally:
        sub.close(0)


def test_slow_clients_do_not_hold_queries_back():
    """Sixteen clients that trickle a request in, a byte at a time, each
    hold an HTTP thread; a query still gets its answer (the library's
    default of 8 threads once left every query waiting behind 8 of them)."""
    index = Index(["tcp://127.0.0.1:1"])
    host, port = index.http.rsplit(":", 1)
    slow = []
    try:
        for _ in range(16):
            s = socket.create_connection((host, int(port)), timeout=5)
            s.sendall(b"POST /query HTTP/1.1\r\nHost: x\r\n")
            slow.append(s)
        stop = threading.Event()

        def trickle():
            while not stop.wait(0.5):
                for s in slow:
                    try:
                        s.sendall(b"X")
                    except OSError:
                        pass

        threading.Thread(target=trickle, daemon=True).start()
        time.sleep(1.0)  # every slow client has a thread by now
        status, answer = index.post({"tokens": [1, 2, 3]})
        assert status == 200, answer
        stop.set()
    finally:
        for s in slow:
            s.close()
        index.stop()


STORED = ["block_hashes", "parent_block_hash", "token_ids", "block_size",
          "lora_id", "medium", "lora_name", "extra_keys", "group_idx",
          "kv_cache_spec_kind", "kv_cache_spec_sliding_window", "locality",
          "ownership", "session_id", "skipped_parent_block_hash",
          "skipped_token_ids", "skipped_extra_keys"]
REMOVED = ["block_hashes", "medium", "group_idx", "locality", "ownership"]


def as_maps(payload):
    """A batch with each event as the reference engine writes it since its
    PR #42892: a map of field names with the tag under "type", nil fields
    left out (msgspec's omit_defaults)."""
    ts, events, *rest = msgpack.unpackb(payload, raw=False)
    out = []
    for event in events:
        tag, fields = event[0], event[1:]
        names = STORED if tag == "BlockStored" else REMOVED
        out.append({"type": tag, **{n: v for n, v in zip(names, fields)
                                    if v is not None}})
    return msgpack.packb([ts, out, *rest], use_bin_type=True)


def test_hkv_index_reads_map_encoded_events_with_no_flag():
    context = zmq.Context()
    raw = RawPublisher(context)
    index = None
    try:
        index = Index([raw.endpoint])
        join(index, 0, raw.send)
        engine = Engine()
        payloads = captured(context, engine,
                            lambda: engine.prefill("a", PROMPT, [64, 136]))
        assert any(b"BlockStored" in p for p in payloads)
        for payload in payloads:
            raw.send(payload=as_maps(payload))
        wait_until(lambda: matches(index, QUERY)[0] == engine.lookup(QUERY),
                   "the index to read the map-encoded batches")
        assert engine.lookup(QUERY)["attention_tokens"] > 0
        assert index.value("hkv_index_rejected_batches_total", 0) == 0
    finally:
        if index is not None:
            index.stop()
        raw.socket.close(0)
        context.term()


def test_gaps_that_no_replay_answers_claim_nothing_and_stop_promptly():
    """A publisher whose replay socket never answers: each gap holds the
    instance (it claims nothing: the lost batches may have removed what it
    stored) until the replay gives up and clears it, and a SIGTERM during
    such replays stops the index at once instead of after every 2 s wait
    (it once took 18 s after ten gaps)."""
    context = zmq.Context()
    raw = RawPublisher(context)
    silent = context.socket(zmq.ROUTER)
    silent.setsockopt(zmq.LINGER, 0)
    silent.bind("tcp://127.0.0.1:*")
    replay = silent.getsockopt_string(zmq.LAST_ENDPOINT)
    index = None
    try:
        index = Index([f"{raw.endpoint},{replay}"])
        join(index, 0, raw.send)
        engine = Engine()
        for payload in captured(context, engine,
                                lambda: engine.prefill("a", PROMPT, [64, 136])):
            raw.send(payload=payload)
        wait_until(lambda: matches(index, QUERY)[0] == engine.lookup(QUERY),
                   "the index to learn the prompt")
        assert engine.lookup(QUERY)["attention_tokens"] > 0
        # Joining may itself have counted a gap (the first batches sent
        # before the subscription took hold): count from here.
        gaps = index.value("hkv_index_gaps_total", 0)
        for seq in range(raw.seq + 10, raw.seq + 110, 10):  # ten gaps
            raw.send(seq=seq)
        wait_until(lambda: index.value("hkv_index_gaps_total", 0) > gaps,
                   "the first gap")
        assert matches(index, QUERY)[0] == {"hybrid_tokens": 0,
                                            "attention_tokens": 0}
        started = time.monotonic()
        index.proc.terminate()
        assert index.proc.wait(timeout=10) == 0, index.log
        assert time.monotonic() - started < 5.0
    finally:
        if index is not None:
            index.stop()
        silent.close(0)
        raw.socket.close(0)
        context.term()


@pytest.mark.parametrize("args, message", [
    ([], "no instance: give --instance or --instances-file"),
    (["--instance", "10.0.0.7:5557"], "is not ENDPOINT[,REPLAY_ENDPOINT]"),
    (["--instance", "tcp://127.0.0.1:1", "--http", "nope"],
     '--http: "nope" is not HOST:PORT'),
    (["--instance", "tcp://127.0.0.1:1", "--zmq-bind", "bogus://x"],
     "--zmq-bind: cannot bind"),
    (["--instance", "tcp://127.0.0.1:1", "--key-function", "xxh3_128_cbor"],
     "xxh3_128_cbor keys need the engines' shared seed"),
])
def test_hkv_index_usage_errors_exit_2(args, message):
    done = subprocess.run([str(cli()), "index", "--groups", GROUPS, *args],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr


def test_hkv_index_forgets_what_a_frame_over_its_limit_cost():
    """A legitimate batch over the index's frame limit (a multi-million
    token prompt) drops the link and is lost, replay included. What the
    engine does next (here: a prefix-cache reset) may then come before any
    later batch reveals the gap, so the index must not keep answering from
    what it held: the engine's own lookup says 0, and so must the index,
    within a bounded time, with no further batch, and go on saying it."""
    engine = Engine()
    engine.kv = hkv.KVCacheManager(groups=GROUPS, num_blocks=200_000,
                                   key_function="sha256_cbor",
                                   enable_kv_cache_events=True)
    index = None
    try:
        index = Index([f"{engine.publisher.endpoint},"
                       f"{engine.publisher.replay_endpoint}"])
        join(index, 0, engine.publish)
        engine.prefill("a", PROMPT, [64, 136])
        wait_until(lambda: matches(index, QUERY)[0] == engine.lookup(QUERY),
                   "the index to learn the prompt")
        assert engine.lookup(QUERY)["attention_tokens"] > 0
        # Token ids above 2^16: 5 msgpack bytes each; 2.6M of them make a
        # BlockStored batch above 16 MiB.
        huge = [70_000 + i % 1_000_000 for i in range(2_600_000)]
        engine.prefill("huge", huge, [len(huge)])
        assert engine.kv.reset_prefix_cache()
        engine.publish()
        assert engine.publisher.flush(10.0)
        assert engine.lookup(QUERY)["attention_tokens"] == 0
        wait_until(lambda: matches(index, QUERY)[0] == engine.lookup(QUERY),
                   "the index to stop claiming what the engine dropped")
        # Nor after the probes of the silent instance (one a second): a
        # replay from 0 brings the prompt back but never the batch over
        # the limit, nor the reset after it.
        until = time.monotonic() + 3.5
        while time.monotonic() < until:
            assert matches(index, QUERY)[0] == engine.lookup(QUERY)
            time.sleep(0.05)
    finally:
        if index is not None:
            index.stop()


def _traffic(engines, seed, count):
    """Each engine computes `count` prompts of a shared family and its own
    (its 400 blocks overflow, so the streams remove keys as well)."""
    import random
    rng = random.Random(seed)
    prompts = []
    for i in range(count):
        for e, engine in enumerate(engines):
            base = PROMPT[:rng.choice((0, 64, 128))]
            tokens = base + [rng.randrange(10000, 20000)
                             for _ in range(rng.randrange(200, 400))]
            # Two chunks: the recurrent state is kept where the first ends.
            cut = len(tokens) // 32 * 16
            engine.prefill(f"s{seed}-{i}-{e}", tokens,
                           [cut, len(tokens) - cut])
            prompts.append(tokens)
    return prompts


def _caught_up(replicas, engines):
    for replica in replicas:
        for i, engine in enumerate(engines):
            wait_until(lambda r=replica, i=i, e=engine:
                       r.value("hkv_index_batches_total", i) >=
                       e.publisher.counters.published,
                       f"instance {i}'s batches at a replica")


def test_replicas_answer_identically_after_one_restarts():
    """Three `hkv index` replicas share nothing but the engines' streams.
    One is killed, the engines go on (storing and evicting), and the one
    restarted catches up by replay (the probe of an instance it never
    heard asks the history from 0, with no new batch published): all three
    answer every prompt as the engines' own lookups do."""
    engines = [Engine(), Engine(), Engine()]
    endpoints = [f"{e.publisher.endpoint},{e.publisher.replay_endpoint}"
                 for e in engines]
    replicas = []
    try:
        replicas = [Index(endpoints) for _ in range(3)]
        for replica in replicas:
            for i, engine in enumerate(engines):
                join(replica, i, engine.publish)
        prompts = _traffic(engines, 1, 12)
        _caught_up(replicas, engines)
        replicas[1].stop()
        prompts += _traffic(engines, 2, 12)
        assert sum(e.kv.take_events() == [] for e in engines) == 3
        replicas[1] = Index(endpoints)  # nothing is published meanwhile
        _caught_up(replicas, engines)
        assert replicas[1].value("hkv_index_replays_total", 0) >= 1
        removed = sum(replicas[0].value("hkv_index_removed_keys_total", i)
                      + replicas[0].value("hkv_index_evicted_keys_total", i)
                      for i in range(3))
        assert removed > 0
        queries = prompts[::3] + [QUERY, OTHER]
        for tokens in queries:
            expected = [e.lookup(tokens) for e in engines]
            for replica in replicas:
                assert matches(replica, tokens) == expected
        assert any(m["hybrid_tokens"] > 0 for tokens in queries
                   for m in matches(replicas[1], tokens))
    finally:
        for replica in replicas:
            replica.stop()
