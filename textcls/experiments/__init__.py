"""Experiments on top of the library: benchmarks (`python -m textcls bench`) and the papers' reproduction
(`python -m textcls reproduce`). Import the modules themselves; this package imports none of them.

One job per module; imports point down ("a <- b": b imports a): papers <- cells <- results <- reproduce;
papers, measure, specs <- paper_bench <- bench <- latency; background <- latency. No module of the library below
imports this package.
- `papers`: the papers' reported numbers (no torch);
- `measure`: environment and load note, timing, peak memory;
- `background`: background load (BusyLoad, CPU-seconds of other processes), the latency default (no torch);
- `specs`: the benchmarked models (BenchModel, default_models), building them, random inputs, parameter counts;
- `paper_bench`: ACT Table 5 and LAMA Fig. 4 (with the SAN / Transformer attention modules it counts);
- `bench`: run_bench (per-model size, speed, memory; shipped checkpoints) and its text report;
- `latency`: one sentence's latency per thread count, idle and under background load (`bench --latency`);
- `cells`: the reproduction's cells and suites (no torch);
- `results`: the results file, summaries, the accuracy target and the Markdown report (no torch);
- `reproduce`: running the cells, resumable, with a locked results file.
"""
