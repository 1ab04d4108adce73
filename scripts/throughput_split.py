#!/usr/bin/env python3
"""Draws the held-out part of the published-throughput suite
(tests/reference/throughput_cases.json) and writes each case's `split` (`train` or
`heldout`) into the file.

    python3 scripts/throughput_split.py

30 % of each source's cases (torchtitan TT-*, Megatron-LM's README MG-*, the Megatron-LM
paper NA-*; then, each added after the earlier draws, which it leaves unchanged:
Megatron-LM's CI golden iteration times MC-*, torchtitan's H200 runs TH-* and MosaicML
llm-foundry's MPT benchmarks MF-*), rounded,
drawn by a seeded shuffle (`HELDOUT_SEED`).
The step-time model (core/src/steptime.rs) is not developed against the held-out cases; the budget in
core/tests/plan.rs (`held_out_throughput_within_budget`) is asserted on them. Re-running
the script gives the same split (the draw depends only on the seed and the case ids in
file order).
"""
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "..", "tests", "reference", "throughput_cases.json")
HELDOUT_SEED = 20261124
HELDOUT_FRACTION = 0.3
SOURCES = ("TT", "MG", "NA", "MC", "TH", "MF")


def main():
    with open(PATH) as f:
        suite = json.load(f)
    cases = suite["cases"]
    held, draw = set(), random.Random(HELDOUT_SEED)
    for source in SOURCES:
        order = [c["id"] for c in cases if c["id"].startswith(source + "-")]
        draw.shuffle(order)
        held |= set(order[: round(HELDOUT_FRACTION * len(order))])
    unknown = [c["id"] for c in cases if not c["id"].startswith(tuple(s + "-" for s in SOURCES))]
    if unknown:
        raise SystemExit(f"cases of no known source: {unknown}")
    for c in cases:
        c["split"] = "heldout" if c["id"] in held else "train"
    with open(PATH, "w") as f:
        f.write(json.dumps(suite, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases, {len(held)} held out: {sorted(held)}")


if __name__ == "__main__":
    main()
