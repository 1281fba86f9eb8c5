#!/usr/bin/env python3
"""Writes a deterministic token-id trace (include/hkv/token_trace.h) of
chat sessions for the CLI tests: a shared system prompt, sessions whose
turns quote the turn before (its prompt, then a new message), and a few
requests under a LoRA adapter.

    tests/make_token_trace.py OUT.jsonl [--sessions 60] [--turns 5]
"""
import argparse
import json
import random


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--sessions", type=int, default=60)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    words = lambda n: [rng.randrange(1000, 150000) for _ in range(n)]
    lines = [{"define": "system", "token_ids": words(600)}]
    for s in range(args.sessions):
        history = []
        for turn in range(1, args.turns + 1):
            history += words(rng.randrange(40, 200))
            line = {"arrival_s": round(0.25 * s, 3), "prefix": "system",
                    "token_ids": list(history),
                    "output_tokens": rng.randrange(16, 128),
                    "session": f"chat-{s}", "turn": turn, "think_s": 2.0}
            if s % 10 == 9:
                line["lora"] = "sql-adapter"
            lines.append(line)
            history += words(32)  # the answer, quoted by the next turn
    # Arrivals must not decrease in file order: sort turns by arrival.
    requests = sorted(lines[1:], key=lambda l: (l["arrival_s"], l["turn"]))
    with open(args.out, "w", encoding="utf-8") as f:
        for line in [lines[0]] + requests:
            f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
