"""Bytes per second of store and load through each offload tier, through
the Python binding the engine's connector uses, beside a host memcpy.

    /usr/bin/python3 python/bench/bench_tiers.py [--groups 64] [--mib 4]

Each round stores --groups object groups of --mib MiB (two parts: a page
and a state) through a one-tier chain, then loads them back (every check
included); the figure is the median of 5 rounds. Redis is a redis-server
this script starts on a free loopback port (skipped when not installed).
"""
import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from hkv import _hkv


def _memcpy(total, rounds):
    """Bytes per second of a copy into memory already touched, and into
    fresh memory (the page faults of a new allocation included)."""
    source = bytearray(os.urandom(1 << 20)) * (total >> 20)
    target = bytearray(len(source))
    target[:] = source  # touch every page once
    warm, fresh = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        target[:] = source
        warm.append(time.perf_counter() - start)
        start = time.perf_counter()
        copy = bytes(source)
        fresh.append(time.perf_counter() - start)
        del copy
    return (total / statistics.median(warm),
            total / statistics.median(fresh))


def _round(make_store, groups):
    chain = _hkv.TierChain(model="bench", geometry="g", stores=[make_store()])
    start = time.perf_counter()
    stored = chain.store(groups)
    store_s = time.perf_counter() - start
    start = time.perf_counter()
    loaded = chain.load([g.key for g in groups])
    load_s = time.perf_counter() - start
    assert stored == len(groups) and all(loaded), "a tier lost a group"
    return store_s, load_s


def _redis():
    if shutil.which("redis-server") is None:
        return None, None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
         "--save", "", "--appendonly", "no", "--proto-max-bulk-len", "1gb"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return server, port
        time.sleep(0.02)
    server.kill()
    return None, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=64)
    parser.add_argument("--mib", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    half = (args.mib << 20) // 2
    groups = [_hkv.ObjectGroup(
        key=i.to_bytes(32, "big"), end_tokens=16 * (i + 1),
        parts=[(0, os.urandom(half)), (1, os.urandom(half))])
        for i in range(args.groups)]
    total = args.groups * (args.mib << 20)
    print(f"{args.groups} groups of {args.mib} MiB, median of "
          f"{args.rounds} rounds")
    warm, fresh = _memcpy(total, args.rounds)
    print(f"{'memcpy':<14} warm {warm / 1e9:6.2f} GB/s   "
          f"into fresh memory {fresh / 1e9:6.2f} GB/s")
    server, port = _redis()
    directory = tempfile.mkdtemp(prefix="hkv-bench-")
    tiers = {
        "host": lambda: _hkv.host_store(2 * total),
        "file": lambda: _hkv.open_file_store(directory),
    }
    if server is not None:
        tiers["redis"] = lambda: _hkv.redis_store(port=port, timeout_s=30)
    try:
        for name, make in tiers.items():
            rounds = [_round(make, groups) for _ in range(args.rounds)]
            store = total / statistics.median(r[0] for r in rounds)
            load = total / statistics.median(r[1] for r in rounds)
            print(f"{name:<14} store {store / 1e9:6.2f} GB/s   "
                  f"load {load / 1e9:6.2f} GB/s")
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        if server is not None:
            server.send_signal(signal.SIGKILL)
            server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
