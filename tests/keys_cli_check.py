#!/usr/bin/env python3
"""Checks `hkv keys` against keys derived by hand from spec §2's CBOR layout
(hashed here with hashlib, independently of hkv).

Usage: keys_cli_check.py HKV TOKENS_JSON, where TOKENS_JSON holds the
tokens 1..9 (two 4-token units and one token left over)."""
import hashlib
import json
import subprocess
import sys


def sha256(hex_bytes):
    return hashlib.sha256(bytes.fromhex(hex_bytes)).hexdigest()


def main():
    hkv, tokens = sys.argv[1:3]
    out = subprocess.run(
        [hkv, "keys", tokens, "--hash-unit", "4", "--seed", "0",
         "--lora", "x:/a/x", "--mm", "img:2:4", "--salt", "s", "--json"],
        check=True, capture_output=True, text=True).stdout
    result = json.loads(out)

    seed_key = sha256("6130")                  # text(1) "0"
    lora = ("83" "646c6f7261"                  # ["lora",
            "6178"                             #  "x",
            "642f612f78")                      #  "/a/x"]
    salt = "82" "6a63616368655f73616c74" "6173"  # ["cache_salt", "s"]
    k0 = sha256("83"                           # [parent, tokens, extra]
                "5820" + seed_key +            # bytes(32): the seed key
                "8401020304"                   # [1, 2, 3, 4]
                "83" + lora +                  # 3 extra keys: lora,
                "83626d6d63696d6702" + salt)   # ["mm", "img", 2], salt
    k1 = sha256("835820" + k0 +                # parent K0
                "8405060708"                   # [5, 6, 7, 8]
                "82" + lora +                  # 2 extra keys: lora,
                "83626d6d63696d6721")          # ["mm", "img", -2]
    expected = {"scheme": {"key_function": "sha256_cbor", "hash_unit": 4,
                           "seed": "0", "seed_key": seed_key},
                "num_tokens": 9, "keys": [k0, k1]}
    if result != expected:
        print(f"hkv keys printed\n{out}\nexpected\n"
              f"{json.dumps(expected, indent=2)}")
        return 1
    print("hand-derived keys match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
