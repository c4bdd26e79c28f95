"""Lesson 09's sentences about what a GPU does, and the H100 SXM records that show them
(see tests/hygiene/test_lessons_agree_with_records.py).

The records: ``09_fusion`` and ``09_compile`` (``gpulab bench --lesson 09`` on one H100 SXM, 2026-11-27) and that run's
logs, ``tools/gpu-runner/records/2026-11-27-h100/`` (``bench-09.log``; ``lesson-09-outputs.txt``, what each cell of
the lesson printed there). Its README says what they do not hold: ``09_fusion`` has no ``torch.compile`` series (it was
compiled once for every size, ``dynamic=True``, the way the panel no longer compiles, and removed; ``bench-09.log``'s
summary line still says what it measured); ``09_compile`` ran at batch 8 and width 64, not the default width 128; and
the outputs are of the lesson before those two panels changed, every other cell's code being the lesson's.

Lesson 09 also quotes other lessons' records: ``00_roofline`` (the ridge point), ``00_overhead`` (the time per tiny
operation), ``07_profile`` (the CPU's launches) and ``07_slow_loop``'s "+ buffer (2)" epoch at batch 8 (the compile
panel's dashed line at the default width 128: the eager step of the model this lesson compiles).

``UNSHOWN`` holds what no record shows: how a mechanism works (launch counts, graphs per shape, the host's work per
call), what ran only on the build machine's CPU, and the compiled chain at large sizes. ``CONTRADICTED`` (part of
``UNSHOWN``, so the test still finds each sentence where it is quoted) holds sentences the records show otherwise,
each with the evidence; they are reported to the lesson's author.
"""

import json
import re
from pathlib import Path

from gpulab.timing import apart

from claim_kinds import Claim, Unshown

GUIDE = "guide/09_kernels.md"
FIGURES = "src/gpulab/figures.py"
ROOT = Path(__file__).resolve().parents[3]
MiB = 2**20
RUN = "2026-11-27-h100"


# ---- helpers ---------------------------------------------------------------------------------------------------


def _h100_sxm(records, name):
    from gpulab import reference

    record = records.record(name)
    assert reference.gpu_label(record) == "H100 SXM", record["device"]
    assert "HBM3" in record["device"]["name"] and record["device"]["multiprocessors"] == 132, record["device"]
    return record


def _fusion(records):
    """09_fusion on the H100: the eager chain, F.gelu and the copy for x from 16 KiB to 256 MiB."""
    record = _h100_sxm(records, "09_fusion")
    result = record["result"]
    assert result["device"] == "cuda:0" and record["settings"] == {"largest": 256 * MiB}, record["settings"]
    assert result["sizes"][0] == 16 * 2**10 and result["sizes"][-1] == 256 * MiB, result["sizes"]
    return result


def _at(result, size):
    """Each series' seconds (the copy's from its GB/s: it moves 2 × the size) and GB/s at ``size`` bytes of x."""
    i = result["sizes"].index(size)
    gbps = {name: values[i] for name, values in result["gbps"].items()}
    seconds = {name: values[i] for name, values in result["seconds"].items()}
    seconds["copy (x.clone())"] = 2 * size / (gbps["copy (x.clone())"] * 1e9)
    return seconds, gbps


CHAIN, GELU, COPY = "eager chain", "F.gelu (one kernel)", "copy (x.clone())"


def _compile(records):
    """09_compile on the H100: ms per step and the first call (s) of each version, batch 8, width 64."""
    result = _h100_sxm(records, "09_compile")["result"]
    assert (result["device"], result["batch"], result["width"]) == ("cuda:0", 8, 64), result
    assert result["versions"] == ["eager", "torch.compile", "reduce-overhead", "CUDA graph"], result["versions"]
    ms = dict(zip(result["versions"], result["ms_per_step"]["one step"]))
    first_s = dict(zip(result["versions"], result["first_call_s"]["first call"]))
    return ms, first_s


def _outputs(records, cell):
    """What cell ``09-NNN`` printed on the H100 (lesson-09-outputs.txt: each print begins ``[09-NNN]``)."""
    log = records.log("lesson-09-outputs.txt", run=RUN)
    assert "torch 2.11.0+cu130 · device: cuda:0 · Triton 3.6.0, compiled for this GPU" in log
    parts = re.split(r"\[(09-\d{3})\] ", log)
    printed = "\n".join(text for name, text in zip(parts[1::2], parts[2::2]) if name == cell)
    assert printed, f"no output of {cell} in lesson-09-outputs.txt"
    return printed


def _bench_log(records):
    return records.log("bench-09.log", run=RUN)


def _overhead_times(records):
    """00_overhead on the H100: x.add_(1) on a float32 tensor of each size (bytes) → seconds per call."""
    result = _h100_sxm(records, "00_overhead")["result"]
    return dict(zip(result["sizes"], result["seconds"]["cuda:0"]))


def _floor_s(records):
    times = list(_overhead_times(records).values())
    return sorted(times[:3])[1]  # the median of the three smallest sizes, as lesson 00's summary reads it


def _eager_step(records):
    """07_slow_loop's "+ buffer (2)" version: lesson 07's FastNet (lesson 09's Net) stepped eagerly at batch 8, the loss
    added up on the device. Returns (ms per step, steps per epoch, batch)."""
    result = _h100_sxm(records, "07_slow_loop")["result"]
    stage = result["versions"].index("+ buffer (2)")
    batch = result["profiled_samples"] // result["counts"]["optimizer steps"][stage]  # 256 samples in 32 steps
    steps = result["samples"] // batch
    return result["ms_per_epoch"]["one epoch"][stage] / steps, steps, batch


def _notebook_code(path):
    cells = json.loads((ROOT / path).read_text())["cells"]
    return "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "code")


def _width_128(records):
    """The model lesson 07 stepped (FastNet) and the one lesson 09 compiles (Net) are both 64 → 128 → 1 by default;
    the compile panel draws lesson 07's eager step only at batch 8 and width 128 (09_compile's record, at width 64, is
    drawn at its own settings)."""
    assert re.search(
        r"class FastNet\(SlowNet\):\s+def __init__\(self, features=64, width=128\)",
        _notebook_code("notebooks/07_profiling.ipynb"),
    )
    assert re.search(
        r"class Net\(nn\.Module\):.*\n\s+def __init__\(self, features=64, width=128\)",
        _notebook_code("notebooks/09_kernels.ipynb"),
    )
    assert 'result["batch"] == 8 and result["width"] == 128' in (ROOT / FIGURES).read_text()


# ---- 00_roofline, 00_overhead, 07: the roof, the floor, the launches ------------------------------------------------


def _elementwise_far_below_the_ridge(records):
    """An elementwise float32 op: a few FLOPs per 8 bytes, under 1 FLOP/B; the H100 SXM's ridge point (float32 FLOP/s
    over copy bytes/s, lesson 00's roofline) is about 17 FLOP/B."""
    ceilings = _h100_sxm(records, "00_roofline")["result"]["ceilings"]["cuda:0"]
    ridge = ceilings["float32"] / ceilings["copy_gbps"]  # GFLOP/s over GB/s: FLOP per byte
    assert ridge > 10 * (4 / 8), ridge


def _copy_about_2950_of_3350_hbm3(records):
    """What the fusion figure draws where 09_fusion is absent: 00_roofline's copy rate."""
    record = _h100_sxm(records, "00_roofline")
    copy = record["result"]["ceilings"]["cuda:0"]["copy_gbps"]
    assert round(copy, -1) == 2950 and round(record["device"]["peak_memory_gbps"], -1) == 3350, (copy, record["device"])
    assert 'roofline = reference.load("00_roofline") if usable is None else None' in (ROOT / FIGURES).read_text()


def _ten_us_per_tiny_op(records):
    assert round(_floor_s(records) * 1e6) == 10, _floor_s(records)


def _launched_by_the_cpu(records):
    """07_profile's H100 trace: cudaLaunchKernel calls on the CPU's rows, under the ops that made them; the kernels on
    the GPU's; and each tiny op costs the host microseconds (00_overhead)."""
    trace = _h100_sxm(records, "07_profile")["result"]["trace"]
    launches = [e for e in trace if e["name"] == "cudaLaunchKernel"]
    assert launches and all(e["row"].startswith("CPU") and e["category"] == "cuda_runtime" for e in launches)
    kernels = [e for e in trace if e["category"] == "kernel"]
    assert kernels and all(e["row"].startswith("GPU") for e in kernels)
    assert 1e-6 < _floor_s(records) < 1e-4


def _overhead_bound(records):
    """The step's time is per step, not per sample: at batch 256 (32 times the samples) a step took as long as at
    batch 8 (1.04 ms against 1.08 ms). And the profiled step of lesson 07 (batch 256, width 2048, far more arithmetic)
    kept its GPU busy 13% of the time (claims_07's _gpu_busy_13_percent). The records do not separate the launches
    from the host's other work per op (dispatch, autograd): the course calls such a step launch-bound."""
    result = _h100_sxm(records, "07_slow_loop")["result"]
    ms_8, _, batch = _eager_step(records)
    assert batch == 8 and result["versions"][3] == "+ batch 256 (4)"
    ms_256 = result["ms_per_epoch"]["one epoch"][3] / (result["samples"] / 256)
    assert abs(ms_256 / ms_8 - 1) < 0.1, (ms_8, ms_256)
    trace = _h100_sxm(records, "07_profile")["result"]["trace"]
    work = [e for e in trace if e["category"] in ("kernel", "gpu_memset")]
    for step in (e for e in trace if e["name"].startswith("ProfilerStep#")):
        end = step["start_us"] + step["duration_us"]
        busy = sum(e["duration_us"] for e in work if step["start_us"] <= e["start_us"] < end)
        assert busy / step["duration_us"] < 0.2, busy / step["duration_us"]


def _a_value_read_waits(records):
    """07_slow_loop as written: one wait a step beyond its three copies — the loss read back to the host (`.item()`,
    the same `aten::_local_scalar_dense` an `if` on a tensor runs) — and the profiler's own as it stops. And on the
    H100, section 6's explain: the branch on a tensor's value made two graphs and one break."""
    result = _h100_sxm(records, "07_slow_loop")["result"]
    steps = result["profiled_samples"] // 8
    syncs, copies = result["counts"]["syncs"][0], result["counts"][".to calls"][0]
    assert copies == 3 * steps and syncs - copies - 1 == steps, (syncs, copies)
    assert _outputs(records, "09-024").startswith("2 graphs, 1 graph break(s)")


def _far_beyond_l2(records):
    l2 = _h100_sxm(records, "09_fusion")["device"]["l2_cache_bytes"]
    assert l2 == 50 * MiB and 2**26 * 4 == 256 * MiB and 256 * MiB >= 5 * l2, l2
    assert "big = torch.randn(2**26, device=device)" in _notebook_code("notebooks/09_kernels.ipynb")


def _eager_step_1_08_ms(records):
    ms, steps, batch = _eager_step(records)
    assert (batch, steps) == (8, 128)
    assert round(ms * steps) == 138 and round(ms, 2) == 1.08, ms
    _width_128(records)


# ---- 09_fusion: the chain, F.gelu and the copy against size ------------------------------------------------------


def _chain_9x_at_2900(records):
    """At 256 MiB: the chain 8.9× F.gelu's time, both moving about 2,900 GB/s (2,949 and 2,913)."""
    seconds, gbps = _at(_fusion(records), 256 * MiB)
    assert round(seconds[CHAIN] / seconds[GELU], 1) == 8.9, seconds
    assert round(gbps[CHAIN], -2) == 2900 and round(gbps[GELU], -2) == 2900, gbps


def _flat_up_to_16_mib(records):
    """From 16 KiB to 16 MiB (the six smallest sizes): each version's time within 15% of one value (flat), the
    chain's about 100 µs (each within 10%, their mean 102 µs), F.gelu's 11 µs (each within 10%, mean 11.2 µs), and the
    chain about eight times F.gelu's at every size (8.5× to 9.3×: eight launches against one; the log's section 1
    cell lists the chain's eight operators)."""
    result = _fusion(records)
    small = [size for size in result["sizes"] if size <= 16 * MiB]
    assert small[0] == 16 * 2**10 and small[-1] == 16 * MiB and len(small) == 6, small
    times = [_at(result, size)[0] for size in small]
    for name in (CHAIN, GELU, COPY):
        column = [t[name] for t in times]
        assert max(column) / min(column) < 1.15, (name, column)
    chain, gelu = [t[CHAIN] * 1e6 for t in times], [t[GELU] * 1e6 for t in times]
    assert all(abs(us / 100 - 1) < 0.1 for us in chain) and round(sum(chain) / 6, -1) == 100, chain
    assert all(abs(us / 11 - 1) < 0.1 for us in gelu) and round(sum(gelu) / 6) == 11, gelu
    assert all(0.85 * 8 < c / g < 1.2 * 8 for c, g in zip(chain, gelu)), (chain, gelu)
    assert "8 kernels move 288 MiB" in _outputs(records, "09-003")


def _chain_at_the_roof_at_256_mib(records):
    """At 256 MiB (far beyond the 50 MiB L2) the chain's GB/s are within 2% of F.gelu's and the copy's, and its time
    is the 9× bytes' within 2% (8.89×)."""
    result = _fusion(records)
    seconds, gbps = _at(result, 256 * MiB)
    assert abs(gbps[CHAIN] / gbps[COPY] - 1) < 0.02 and abs(gbps[CHAIN] / gbps[GELU] - 1) < 0.02, gbps
    assert result["bytes_ratio"] == 9.0 and abs(seconds[CHAIN] / seconds[GELU] / 9 - 1) < 0.02, seconds


def _h100_at_256_mib(records):
    seconds, gbps = _at(_fusion(records), 256 * MiB)
    assert [round(gbps[name], -1) for name in (CHAIN, GELU, COPY)] == [2950, 2910, 2930], gbps
    assert round(seconds[CHAIN] / seconds[GELU], 1) == 8.9, seconds


def _record_drawn(records):
    """The fusion figure draws 09_fusion's series at any settings (no setting must match), dashed, as the H100 SXM's."""
    _fusion(records)
    source = (ROOT / FIGURES).read_text()
    assert "usable = _same_experiment(record, result, ())" in source


def _copy_roof_past_l2(records):
    """At 256 MiB the copy's 2,929 GB/s (of the 3,352 GB/s peak the record's device gives, 3,350 on the data sheet)
    is the highest rate of a fused kernel: F.gelu's 2,913 is under it (the eager chain's 2,949 is over it by 0.7%,
    within the timing's noise)."""
    record = _h100_sxm(records, "09_fusion")
    _, gbps = _at(record["result"], 256 * MiB)
    assert round(gbps[COPY], -1) == 2930 and round(record["device"]["peak_memory_gbps"], -1) == 3350, gbps
    assert record["device"]["l2_cache_bytes"] == 50 * MiB
    assert gbps[GELU] <= gbps[COPY] and gbps[CHAIN] <= 1.01 * gbps[COPY], gbps


def _in_l2_within_noise(records):
    """At 16 MiB (x and its result, 32 MiB, fit the 50 MiB L2) each call still takes about what it takes at 16 KiB
    (the curves are flat), and F.gelu's 2,965 GB/s and the copy's 2,732 are 8% apart: within noise, less than the
    10% of the larger two unspread numbers must differ by (gpulab.timing.apart)."""
    _flat_up_to_16_mib(records)
    _, at_16 = _at(_fusion(records), 16 * MiB)
    assert round(at_16[GELU]) == 2965 and round(at_16[COPY]) == 2732, at_16
    assert not apart(at_16[GELU], None, at_16[COPY], None) and 2 * 16 * MiB < 50 * MiB, at_16


def _in_l2_within_noise_of_the_roof(records):
    """F.gelu's 2,965 GB/s at 16 MiB, inside the L2, and the copy's 2,930 at 256 MiB, past it: 1% apart, within
    noise."""
    result = _fusion(records)
    _, at_16 = _at(result, 16 * MiB)
    _, at_256 = _at(result, 256 * MiB)
    assert round(at_16[GELU]) == 2965 and round(at_256[COPY], -1) == 2930, (at_16, at_256)
    assert not apart(at_16[GELU], None, at_256[COPY], None) and 2 * 16 * MiB < 50 * MiB, (at_16, at_256)


def _compile_record_at_width_64(records):
    record = _h100_sxm(records, "09_compile")
    assert record["settings"] == {"batch": 8, "width": 64} and record["result"]["width"] == 64, record["settings"]


def _copy_about_the_most(records):
    """At 256 MiB, past the L2, the copy is within 1% of the fastest of the three (the chain: 2,949 to its 2,929)."""
    _, at_256 = _at(_fusion(records), 256 * MiB)
    assert at_256[COPY] >= 0.99 * max(at_256.values()), at_256


def _compiled_step_not_faster(records):
    result = _h100_sxm(records, "09_compile")["result"]
    ms = dict(zip(result["versions"], result["ms_per_step"]["one step"]))
    first = dict(zip(result["versions"], result["first_call_s"]["first call"]))
    assert ms["torch.compile"] > ms["eager"] and first["torch.compile"] >= 1.0, (ms, first)


def _no_compiled_series(records):
    result = _fusion(records)
    assert set(result["gbps"]) == {CHAIN, GELU, COPY} and set(result["seconds"]) == {CHAIN, GELU}, result.keys()


def _traffic_far_beyond_launches(records):
    """For small tensors (up to 16 MiB) the chain's time is its eight launches' (flat, about 8× F.gelu's); at 256 MiB,
    268 MB — hundreds of megabytes, five times the 50 MiB L2 — it took 1.64 ms, 16× its time at 16 MiB."""
    _flat_up_to_16_mib(records)
    result = _fusion(records)
    at_16, _ = _at(result, 16 * MiB)
    at_256, _ = _at(result, 256 * MiB)
    assert at_256[CHAIN] > 10 * at_16[CHAIN], (at_16, at_256)


def _host_shows_at_16_mib(records):
    """Section 1's cell on the H100 (x of 16 MiB): the compiled chain 0.044 ms, F.gelu 0.010 ms."""
    printed = _outputs(records, "09-005")
    assert re.search(r"torch\.compile\s+0\.044 ms", printed) and re.search(
        r"F\.gelu \(one kernel\)\s+0\.010 ms", printed
    )
    assert "reads  16 MiB, writes  16 MiB" in _outputs(records, "09-003")


# ---- 09_compile: the step at batch 8 ---------------------------------------------------------------------------------


def _step_nearly_all_overhead(records):
    """The CUDA graph's step — the GPU's work for the whole step, with the batch copied in — took 4% of the eager
    step's (0.035 against 0.875 ms); and lesson 07's step cost the same at 32 times the batch (_overhead_bound)."""
    ms, _ = _compile(records)
    assert ms["CUDA graph"] < 0.05 * ms["eager"], ms
    _overhead_bound(records)


def _about_a_ms_waiting(records):
    ms, _ = _compile(records)
    assert round(ms["eager"]) == 1 and ms["CUDA graph"] < 0.05 * ms["eager"], ms


def _graph_falls(records):
    """The hand-captured graph replays the whole step: 0.035 ms per step against eager's 0.875, 25×."""
    ms, _ = _compile(records)
    assert ms["eager"] / ms["CUDA graph"] > 20, ms


def _graph_25x(records):
    ms, _ = _compile(records)
    assert round(ms["CUDA graph"], 3) == 0.035 and round(ms["eager"], 2) == 0.88, ms
    assert round(ms["eager"] / ms["CUDA graph"]) == 25, ms


def _two_graph_versions(records):
    """On the H100 both graph versions ran: the hand capture at 4% of eager's step, reduce-overhead under
    torch.compile's step (1.25 against 1.31 ms: the same compiled model with its launches replayed), though above eager's."""
    ms, _ = _compile(records)
    assert ms["CUDA graph"] < 0.05 * ms["eager"] and ms["reduce-overhead"] < ms["torch.compile"], ms


def _compiled_slower(records):
    ms, _ = _compile(records)
    assert round(ms["reduce-overhead"], 2) == 1.25 and round(ms["torch.compile"], 2) == 1.31, ms
    assert ms["reduce-overhead"] > ms["eager"] and ms["torch.compile"] > ms["eager"], ms
    assert "torch.compile is no faster here: it never pays back" in _bench_log(records)


def _first_call_seconds(records):
    """torch.compile's first call 2.0 s, the hand capture's 8 ms; every version's step rounds to a millisecond or less
    (0.035 to 1.31 ms)."""
    ms, first_s = _compile(records)
    assert round(first_s["torch.compile"], 1) == 2.0 and round(first_s["CUDA graph"] * 1e3) == 8, first_s
    assert all(round(value) <= 1 for value in ms.values()), ms


def _compile_takes_seconds(records):
    """The first call of a compiled function on the H100: 1.0 s for section 1's chain, 2.0 s for the step."""
    _, first_s = _compile(records)
    assert "torch.compile's first call: 1.0 s (compiling)" in _outputs(records, "09-005")
    assert first_s["torch.compile"] > 1


# ---- the lesson's outputs on the H100 --------------------------------------------------------------------------------


def _inductor_wrote_triton(records):
    """Section 3's cell on the H100: the code Inductor wrote for the chain is one Triton kernel, for CUDA."""
    printed = _outputs(records, "09-009")
    assert printed.count("@triton.jit") == 1 and "device_str='cuda'" in printed, printed
    assert "def triton_poi_fused_add_mul_pow_tanh_0(" in printed


def _one_load(records):
    printed = _outputs(records, "09-009")
    assert "fused_add_mul_pow_tanh" in printed and printed.count("tl.load(") == 1, printed


def _one_store(records):
    """Between the one load and the one store the kernel's arithmetic runs on ``tmp`` values (registers): the eight
    operators' multiplies, adds and tanh (``x**3`` as two multiplies), nothing written back in between."""
    printed = _outputs(records, "09-009")
    assert printed.count("tl.store(") == 1 and "libdevice.tanh(tmp9)" in printed, printed
    between = printed[printed.index("tl.load(") : printed.index("tl.store(")]
    assert len(re.findall(r"tmp\d+ = tmp\d+ [*+] tmp\d+", between)) == 8, between


def _sync_in_capture_fails(records):
    assert "1. .item() during a capture: CUDA error: operation not permitted when stream is capturing" in _outputs(
        records, "09-016"
    )


def _python_not_replayed(records):
    assert "2. after 1 capture and 5 replays the Python counter says 1; the GPU's result is [2.0, 2.0, 2.0, 2.0]" in (
        _outputs(records, "09-016")
    )


def _new_shape_refused(records):
    assert (
        "3. a batch of 16 into a graph of 8: The size of tensor a (8) must match the size of tensor b (16) at "
        "non-singleton dimension 0"
    ) in _outputs(records, "09-016")


def _capture_rules(records):
    _sync_in_capture_fails(records)
    _python_not_replayed(records)


def _what_a_graph_replays(records):
    """A fixed-shape step with each batch copied into the captured tensors: the panel's CUDA graph version, 128 steps of
    batch 8 an epoch on the H100 (09_compile), and section 4's replays, whose GPU work ran while the Python did not."""
    _graph_falls(records)
    _python_not_replayed(records)


def _triton_timed(records):
    """Section 5's cell on the H100 (x of 256 MiB, 2 × its bytes moved): Triton 2,914 GB/s, F.gelu 2,947, the copy
    2,969; Triton within 2% of F.gelu."""
    printed = _outputs(records, "09-022")
    gbps = {
        name: float(rate)
        for name, rate in re.findall(r"^(Triton GELU|F\.gelu|copy)\s+[\d.]+ ms\s+(\d+) GB/s", printed, flags=re.M)
    }
    assert gbps == {"Triton GELU": 2914, "F.gelu": 2947, "copy": 2969}, printed
    assert gbps["Triton GELU"] > 0.98 * gbps["F.gelu"]
    for name, ms in re.findall(r"^(Triton GELU|F\.gelu|copy)\s+([\d.]+) ms", printed, flags=re.M):
        assert abs(2 * 256 * MiB / (float(ms) * 1e-3) / 1e9 / gbps[name] - 1) < 0.01, (name, ms)
    return gbps


def _fused_under_the_roof(records):
    """At 256 MiB, past the L2: the Triton GELU and F.gelu under the copy (the log's section 5 cell), F.gelu under the
    copy in 09_fusion too."""
    _triton_timed(records)
    _, gbps = _at(_fusion(records), 256 * MiB)
    assert gbps[GELU] < gbps[COPY], gbps


# ---- the guide's H100 paragraphs ------------------------------------------------------------------------------------


def _readme(records):
    return records.log("README.md", run=RUN)


def _guide_fusion_record(records):
    """09_fusion ran at the default a CUDA GPU now gets (the slider's 2**28 on CUDA), 16 KiB to 256 MiB; the README
    says why it has no compiled series."""
    _fusion(records)
    assert 'bytes_slider("largest x", 2**16, 2**30, 2**28 if device.type == "cuda" else 2**24' in _notebook_code(
        "notebooks/09_kernels.ipynb"
    )
    _no_compiled_series(records)
    assert "compiled once for every size (`dynamic=True`)" in _readme(records)
    assert "torch._dynamo.reset()" in _notebook_code("notebooks/09_kernels.ipynb")
    assert "torch.compile(gelu_tanh, dynamic=False)" in _notebook_code("notebooks/09_kernels.ipynb")


def _guide_256_mib(records):
    _h100_at_256_mib(records)
    _chain_at_the_roof_at_256_mib(records)
    assert _h100_sxm(records, "09_fusion")["device"]["l2_cache_bytes"] == 50 * MiB


def _guide_triton_printed(records):
    """The log's lines, as the guide quotes them (spaces collapsed), and Triton and F.gelu both within noise of the
    copy (2% and 1% under it: unspread numbers differ only by more than 10% of the larger, gpulab.timing.apart)."""
    printed = " ".join(_outputs(records, "09-022").split())
    for line in ("Triton GELU 0.184 ms 2914 GB/s", "F.gelu 0.182 ms 2947 GB/s", "copy 0.181 ms 2969 GB/s"):
        assert line in printed, printed
    gbps = _triton_timed(records)
    for name in ("Triton GELU", "F.gelu"):
        assert not apart(gbps[name], None, gbps["copy"], None), gbps
    assert "big = torch.randn(2**26, device=device)" in _notebook_code("notebooks/09_kernels.ipynb")


def _guide_compile_record(records):
    """09_compile at batch 8 and width 64, drawn only at its own settings (the figure compares both)."""
    _compile(records)
    assert 'usable = _same_experiment(record, result, ("batch", "width"))' in (ROOT / FIGURES).read_text()
    assert "lowered the width slider's default" in _readme(records)


def _guide_compile_times(records):
    ms, _ = _compile(records)
    assert [
        round(ms[name], places)
        for name, places in (("eager", 3), ("torch.compile", 2), ("reduce-overhead", 2), ("CUDA graph", 3))
    ] == [0.875, 1.31, 1.25, 0.035]
    assert round(ms["eager"] / ms["CUDA graph"]) == 25, ms


def _guide_first_calls(records):
    _, first_s = _compile(records)
    assert [
        round(first_s[name], places)
        for name, places in (("eager", 2), ("torch.compile", 1), ("reduce-overhead", 2), ("CUDA graph", 3))
    ] == [0.36, 2.0, 0.71, 0.008]
    _compiled_slower(records)


def _guide_graph_against_eager(records):
    ms, _ = _compile(records)
    assert round(ms["CUDA graph"], 3) == 0.035 and round(ms["eager"], 3) == 0.875, ms


def _guide_reduce_overhead_slower(records):
    ms, _ = _compile(records)
    assert ms["reduce-overhead"] > ms["eager"], ms


def _guide_lesson_09_run(records):
    """The 2026-11-27 run: one H100 SXM, the two panels (the shipped records) and every cell's printed output."""
    readme = _readme(records)
    assert (
        "One NVIDIA H100 SXM, 2026-11-27: lesson 09" in readme
        and "every cell of `notebooks/09_kernels.ipynb`" in readme
    )
    assert "The lease was short" in readme
    for name in ("09_fusion", "09_compile"):
        record = _h100_sxm(records, name)
        assert record["recorded"] == "2026-11-27" and record["command"].startswith("gpulab bench --lesson 09"), record
    assert "2 experiment(s) recorded" in _bench_log(records)


def _guide_compile_ran_at_64(records):
    _guide_lesson_09_run(records)
    _compile(records)
    assert "the default is width 128" in _readme(records)
    _width_128(records)


def _guide_cpu_sees_two(records):
    """The record's first two versions are eager and torch.compile, the two a CPU runs."""
    result = _h100_sxm(records, "09_compile")["result"]
    assert result["versions"][:2] == ["eager", "torch.compile"] and (result["batch"], result["width"]) == (8, 64)


def _guide_compile_h100(records):
    ms, steps, batch = _eager_step(records)
    result = _h100_sxm(records, "07_slow_loop")["result"]
    assert (batch, steps) == (8, 128) and round(ms * steps) == 138 and round(ms, 2) == 1.08
    assert round(result["ms_per_epoch"]["one epoch"][3], 1) == 4.2 and result["samples"] // 256 == 4
    _overhead_bound(records)


CLAIMS = [
    # objectives
    Claim("Inductor writes kernels (Triton for GPUs, C++ for CPUs)", _inductor_wrote_triton),
    Claim('by hand with torch.cuda.graph and with mode="reduce-overhead"', _two_graph_versions),
    Claim("replay lesson 07's launch-bound training step as a CUDA graph", _step_nearly_all_overhead),
    # §1
    Claim(
        "Lesson 00 measured that an elementwise operation does a few FLOPs for every 8 bytes it moves (4 read, 4 "
        "written, in float32): its arithmetic intensity is far below any device's ridge point",
        _elementwise_far_below_the_ridge,
    ),
    Claim(
        "An H100 SXM bore it out (this lesson's record, in the panel below): at 256 MiB the chain took 8.9× the time "
        "of F.gelu, each moving about 2,900 GB/s.",
        _chain_9x_at_2900,
    ),
    Claim(
        "At this cell's 16 MiB a GPU call is short enough for the host's part to show: on the H100 the compiled chain "
        "took 44 µs to F.gelu's 10",
        _host_shows_at_16_mib,
    ),
    # §2 and the fusion panel
    Claim(
        "For small inputs a call costs mostly its overhead (lesson 00): on a GPU the curves are flat there, whatever "
        "the size, and the chain pays eight overheads where the others pay one — on the H100 SXM, about 100 µs a call "
        "for the chain and 11 µs for F.gelu, from 16 KiB to 16 MiB.",
        _flat_up_to_16_mib,
    ),
    Claim(
        "For large ones, on a GPU, the eager chain's GB/s sit with the fused kernel's and the copy's: each of its "
        "eight kernels is as fast as a memory-bound kernel can be, and the chain is slow only because it moves 9× the "
        "bytes.",
        _chain_at_the_roof_at_256_mib,
    ),
    Claim(
        "On the H100 SXM at 256 MiB: the chain 2,950 GB/s, F.gelu 2,910, the copy 2,930 — and the chain took 8.9× "
        "F.gelu's time.",
        _h100_at_256_mib,
    ),
    Claim(
        "The dashed lines are the H100 SXM's record, drawn over the sizes you chose (256 MiB, where your device allows "
        "it, shows all of it).",
        _record_drawn,
    ),
    Claim(
        "Its copy moved 2,930 GB/s at 256 MiB, of the 3,350 GB/s its HBM3 can move: the pace of data that does not fit "
        "the GPU's L2 cache, 50 MiB on an H100.",
        _copy_roof_past_l2,
    ),
    Claim(
        "Below that, data can stay in the cache between calls, but at 16 MiB a call still costs about its launch: "
        "F.gelu moved 2,965 GB/s there and the copy 2,732, within noise of each other.",
        _in_l2_within_noise,
    ),
    Claim("The record holds no compiled series: that one is drawn for your device only.", _no_compiled_series),
    Claim(
        "Without a record of this panel, the copy rate the GPU of lesson 00's record reached is drawn instead.",
        _copy_about_2950_of_3350_hbm3,
        where=FIGURES,
    ),
    # §3 and the compile panel
    Claim(
        "Inductor fuses the graph's operations into as few kernels as it can and writes them: Triton kernels on a GPU",
        _inductor_wrote_triton,
    ),
    Claim("One kernel, named after what it fused (add_mul_pow_tanh): it loads x once", _one_load),
    Claim("computes the eight operations in registers, and stores the result once.", _one_store),
    Claim("and, on a CUDA GPU, two ways of removing the launches too: CUDA graphs (section 4).", _two_graph_versions),
    Claim("At batch 8 the step is nearly all overhead", _step_nearly_all_overhead),
    Claim("about a millisecond on an H100 SXM (its record below), which waits for the host.", _about_a_ms_waiting),
    Claim(
        "On a CUDA GPU, the CUDA graph captured by hand replays the whole step — forward, backward, the optimizer — "
        "with one launch: where the launches were the cost, the step falls towards the time the GPU spends in its "
        "kernels.",
        _graph_falls,
    ),
    Claim(
        "On the H100 SXM at batch 8 (width 64, its record) it took 0.035 ms against 0.88 eager: 25× less.", _graph_25x
    ),
    Claim("On the H100 it took 1.25 ms, and torch.compile 1.31: both slower than eager", _compiled_slower),
    Claim(
        "The dashed line is the eager step an H100 SXM recorded in lesson 07 for the same model (its fixed loop, with "
        "the buffer), at batch 8 and width 128: 1.08 ms (138 ms for the 128 steps of an epoch).",
        _eager_step_1_08_ms,
    ),
    Claim("At width 64 the dashed curves are this lesson's own H100 record.", _compile_record_at_width_64),
    Claim(
        "the eager step an H100 SXM recorded in lesson 07 at batch 8 and width 128 is drawn beside the reader's.",
        _eager_step_1_08_ms,
        where=FIGURES,
    ),
    Claim(
        "The first call costs seconds — compiling forward and backward, 2.0 s on the H100's host — where a step costs "
        "about a millisecond; capturing the graph by hand took 8 ms.",
        _first_call_seconds,
    ),
    # §4
    Claim(
        "Every kernel a GPU runs was launched by the CPU: PyTorch's dispatcher, then a call into the CUDA driver, each "
        "costing microseconds",
        _launched_by_the_cpu,
    ),
    Claim("an H100 SXM took about 10 µs per tiny operation in lesson 00", _ten_us_per_tiny_op),
    Claim("which is why lesson 07's loop at batch 8 spends its time launching", _overhead_bound),
    Claim("a batch of another size needs a graph of its own", _new_shape_refused),
    Claim(
        "Python, print, counters and anything else the CPU does ran once, during the capture, and is not replayed — "
        "nor can a capture read a value back to the host (.item(), if loss > 0:), which would wait for a GPU that is "
        "only recording",
        _capture_rules,
    ),
    Claim("# 1. a sync inside a capture: reading a value back to the host cannot be recorded", _sync_in_capture_fails),
    Claim("# Python: runs when the graph is captured, never when it is replayed", _python_not_replayed),
    Claim("# 3. a new shape: the graph only knows the shapes it recorded", _new_shape_refused),
    Claim(
        "In the first, the capture stops with an error: .item() must wait for the GPU, and a stream that is recording "
        "cannot be waited on.",
        _sync_in_capture_fails,
    ),
    Claim(
        "In the second, the counter says 1 after five replays: the Python ran once, while recording.",
        _python_not_replayed,
    ),
    Claim("In the third, copy_ cannot put 16 rows into the 8 the graph recorded", _new_shape_refused),
    # §5
    Claim("Inductor writes its GPU kernels in it.", _inductor_wrote_triton),
    Claim(
        "On a GPU, all three are memory-bound and each moves the minimum, 2 bytes for every byte of x: on an H100 SXM "
        "the Triton GELU moved 2,914 GB/s, F.gelu 2,947 and the copy 2,969 — your own kernel, in a dozen lines of "
        "Python, within 2% of PyTorch's.",
        _triton_timed,
    ),
    Claim("A fused kernel cannot beat the roof", _fused_under_the_roof),
    Claim("256 MiB: far beyond the GPU's L2 cache", _far_beyond_l2),
    # §6
    Claim("Timing the first call. It compiles: seconds, not milliseconds.", _compile_takes_seconds),
    Claim(
        "Dynamo cannot put it into a graph, so the graph ends there, and the host waits for the device (a sync, lesson "
        "07).",
        _a_value_read_waits,
    ),
    # summary
    Claim("Inductor fuses and writes Triton (GPU) or C++ (CPU) kernels.", _inductor_wrote_triton),
    Claim(
        "CUDA graphs replay a recorded sequence of kernels with one launch: for small, launch-bound steps.",
        _graph_falls,
    ),
    # the quiz
    Claim(
        "On a GPU, the eager GELU chain reaches about the same GB/s as the fused kernel, yet takes about nine times",
        _chain_at_the_roof_at_256_mib,
    ),
    Claim(
        "Each runs near the memory's bandwidth, as fast as a memory-bound kernel can: the GB/s say so.",
        _copy_roof_past_l2,
    ),
    Claim("It moves about nine times the bytes, at the same rate", _chain_at_the_roof_at_256_mib),
    Claim(
        "For small tensors, yes. For tensors far larger than the GPU's caches — hundreds of megabytes — the memory "
        "traffic takes far longer than the launches.",
        _traffic_far_beyond_launches,
    ),
    Claim("Breaks the graph there: the host waits for the value, and a new graph starts after it", _a_value_read_waits),
    Claim("A graph replays the shapes it recorded: each size needs a graph of its own", _new_shape_refused),
    Claim(".item() waits for the GPU: it cannot be recorded inside a capture.", _sync_in_capture_fails),
    Claim("Same shapes, same addresses, GPU work only: what a graph replays.", _what_a_graph_replays),
    Claim("Each kernel still needs its own launch: the launches, not the kernels, are the cost.", _graph_falls),
    Claim("A CUDA graph, which replays the step's kernels with one launch", _graph_falls),
    # the guide
    Claim(
        "this panel's H100 SXM record — the eager chain, F.gelu and the copy, no compiled series — drawn beside the "
        "room's at every setting, at the room's sizes only (the record's run from 16 KiB to 256 MiB), and labelled as "
        "recorded",
        _guide_fusion_record,
        GUIDE,
    ),
    Claim(
        "this panel's record, gpulab bench at the default of a CUDA GPU: sizes from 16 KiB to 256 MiB.",
        _guide_fusion_record,
        GUIDE,
    ),
    Claim(
        "Up to 16 MiB the curves are flat — about 100 µs a call for the chain, 11 µs for F.gelu: launches, not bytes, "
        "the chain's eight against one.",
        _flat_up_to_16_mib,
        GUIDE,
    ),
    Claim(
        "At 256 MiB, far beyond the 50 MiB L2, the three move the same GB/s — the chain 2,950, F.gelu 2,910, the copy "
        "2,930 — and the chain takes 8.9× F.gelu's time: the memory-bound regime the lesson describes.",
        _guide_256_mib,
        GUIDE,
    ),
    Claim(
        "While the data fits the L2 a curve may pass the copy's rate at 256 MiB, but the record cannot show it: "
        "F.gelu's 2,965 GB/s at 16 MiB is within noise of the copy's 2,930.",
        _in_l2_within_noise_of_the_roof,
        GUIDE,
    ),
    Claim(
        "The record holds no compiled series: it was compiled once for every size then (dynamic=True), not as the "
        "panel now compiles it, and was removed",
        _guide_fusion_record,
        GUIDE,
    ),
    Claim(
        "Section 5's timing cell, on the same machine at 256 MiB, printed Triton GELU 0.184 ms 2914 GB/s, F.gelu "
        "0.182 ms 2947 GB/s and copy 0.181 ms 2969 GB/s: the room's own Triton kernel beside PyTorch's, both within "
        "noise of the copy.",
        _guide_triton_printed,
        GUIDE,
    ),
    Claim(
        "At batch 8 and width 64 the dashed curves are the H100 SXM's record of this panel, drawn for the versions the "
        "room ran (two on a CPU, all four on a CUDA GPU)",
        _guide_compile_record,
        GUIDE,
    ),
    Claim(
        "this panel's record ran at batch 8 and width 64 (the panel's estimate of its own time, since corrected, had "
        "lowered the width's default; the record's README says so) and is drawn beside the room's run at those "
        "settings.",
        _guide_compile_record,
        GUIDE,
    ),
    Claim(
        "Eager took 0.875 ms a step, torch.compile 1.31 ms, reduce-overhead 1.25 ms, and the CUDA graph captured by "
        "hand 0.035 ms — 25× less than eager.",
        _guide_compile_times,
        GUIDE,
    ),
    Claim("Both compiled versions were slower than eager", _compiled_slower, GUIDE),
    Claim(
        "The first calls took 0.36 s eager, 2.0 s for torch.compile, 0.71 s for reduce-overhead and 0.008 s to capture "
        "the graph; the compiled step never pays back.",
        _guide_first_calls,
        GUIDE,
    ),
    Claim(
        "At the default width the record is not drawn, and the dashed line is lesson 07's eager step of the same model",
        _eager_step_1_08_ms,
        GUIDE,
    ),
    Claim("its + buffer epoch at batch 8 took 138 ms, 1.08 ms for each of its 128 steps.", _guide_compile_h100, GUIDE),
    Claim(
        "with batch 256 the epoch took 4.2 ms, 1.04 ms for each of its 4 steps — a step cost the same with many times "
        "the samples, so its time is the host's, not the arithmetic's.",
        _guide_compile_h100,
        GUIDE,
    ),
    Claim(
        "on the H100 SXM at 256 MiB the chain took 8.9× F.gelu's time, each moving about 2,900 GB/s (this lesson's "
        "record).",
        _chain_9x_at_2900,
        GUIDE,
    ),
    Claim(
        "on the H100 SXM the hand-captured graph's step took 0.035 ms against eager's 0.875 ms at batch 8 (this "
        "lesson's record).",
        _guide_graph_against_eager,
        GUIDE,
    ),
    Claim("on the H100 it was slower than eager.", _guide_reduce_overhead_slower, GUIDE),
    Claim(
        "the compile panel this lesson's own at batch 8 and width 64 (its eager and torch.compile points, the two "
        "versions a CPU runs), and lesson 07's eager step at batch 8 and the default width.",
        _guide_cpu_sees_two,
        GUIDE,
    ),
    Claim(
        "09 was run on an H100 SXM on one short lease (tools/gpu-runner/records/2026-11-27-h100/): its two panels, and "
        "every cell of the lesson, whose printed output is kept there.",
        _guide_lesson_09_run,
        GUIDE,
    ),
    Claim(
        "Lesson 09 was run later, on a machine of the same kind (tools/gpu-runner/records/2026-11-27-h100/: its two "
        "panels and every cell's printed output); its compile panel ran at batch 8 and width 64, the default of that "
        "day, where the lesson's default width is now 128.",
        _guide_compile_ran_at_64,
        "guide/index.md",
    ),
    Claim(
        "reads and writes each byte once and computes nothing: about the most a memory-bound kernel can move here",
        _copy_about_the_most,
    ),
    Claim(
        "The first call compiles, for seconds; that pays back only where the compiled step is faster — measure it "
        "(lesson 07's small step was not, on the H100).",
        _compiled_step_not_faster,
    ),
]

_NO_COUNT = (
    "no record counts launches or graphs: 09_compile times each version's step, and the log holds what cells printed"
)
_REDUCE_OVERHEAD = (
    "the lesson's compiled_step compiles the model only: under reduce-overhead its forward and its backward are two "
    "graphs (torch/_inductor/cudagraph_trees.py, a node per CompilationMode.FORWARD / BACKWARD), while the loss, "
    "zero_grad and SGD's step run eagerly; " + _NO_COUNT
)
_NOT_RECORDED_HOST = "no record profiles the host's side of a compiled call: 09_compile and the log hold only times"
_OLD_COMPILE = (
    "09_fusion holds no compiled series (removed: it was compiled once for every size, dynamic=True); the only H100 "
    "measurement of the compiled chain at 256 MiB, that old way, is bench-09.log's summary line — the eager chain took "
    "4.7× its time, so it moved about 1,540 GB/s, half F.gelu's 2,913 (the chain 8.9× F.gelu's). Reported to the "
    "lesson's author: the panel's new per-size compile has not run on a GPU"
)

UNSHOWN = [
    # §1
    Unshown(
        "In eager mode PyTorch runs each operation of your code as a kernel of its own",
        "the H100 log's section 1 cell lists the eight operators PyTorch dispatched (memory_traffic watches dispatch, "
        "not launches); no record traces the chain's kernels",
    ),
    Unshown(
        "# Inductor needs a C++ compiler on a CPU, Triton on a GPU",
        "torch/_inductor/scheduler.py (TritonMissing, GPUTooOldForTriton under compute capability 7.0); the H100 had "
        "Triton, so no record shows what happens without it",
    ),
    Unshown(
        "On a GPU all three are memory-bound, so the model of lesson 00 predicts the result: each eager kernel runs "
        "close to the memory's bandwidth, the chain's GB/s come out near those of the fused kernels, and it takes about "
        "as many times longer as it moves more bytes — 9×.",
        "shown for two of the three (the chain and F.gelu at 256 MiB, claimed with the next sentence); " + _OLD_COMPILE,
    ),
    Unshown(
        "a compiled function does more work on the host per call (checking its guards) than one operator",
        _NOT_RECORDED_HOST + " (the compiled chain's 44 µs against F.gelu's 10 at 16 MiB, claimed above)",
    ),
    Unshown(
        '(3e9 if device.type == "cpu" else 300e9)',
        "a rough rate for the panel's time estimate, not a measurement (09_fusion: estimated 6.3 s, ran in 3.3 s)",
    ),
    # §3
    Unshown(
        "Matrix products go to cuBLAS or a tuned template.",
        "torch/_inductor/kernel/mm.py; the H100 log shows the code Inductor wrote for the elementwise chain only",
    ),
    Unshown(
        "# a new step: the graphs' outputs may be overwritten",
        "torch.compiler.cudagraph_mark_step_begin's docstring (torch/compiler/__init__.py); " + _NO_COUNT,
    ),
    Unshown(
        'the recipe is the "whole-network capture" of PyTorch\'s CUDA semantics notes): warm up on a side stream, '
        "capture one step into the graph, then for each batch copy the data into the captured input tensors and replay.",
        "PyTorch's CUDA semantics notes (CUDA Graphs, whole-network capture): the source of the recipe, which the H100 "
        "ran (09_compile's CUDA graph version)",
    ),
    Unshown("# forward, backward and step: one launch", "torch/cuda/graphs.py (CUDAGraph.replay); " + _NO_COUNT),
    Unshown(
        'compiles = 6 if device.type != "cuda" else 8',
        "a rough compile time for the panel's time estimate, not a measurement (on the H100 the first calls took "
        "2.0, 0.71 and 0.008 s, the whole run 6.1 s: 09_compile's first_call_s and elapsed_s)",
    ),
    Unshown(
        "Python, dispatch and launches around a few microseconds of arithmetic",
        "no record splits a step into the host's work and arithmetic; 09_compile's CUDA graph step, 0.035 ms, bounds "
        "the GPU's whole step (the batch's copies in) at 35 µs, not the arithmetic alone",
    ),
    Unshown(
        "reduce-overhead graphs only what torch.compile compiled, here the model: its forward and its backward become "
        "two graphs, while the loss, zero_grad and the optimizer's step still launch kernel by kernel.",
        _REDUCE_OVERHEAD,
    ),
    Unshown(
        "what they saved in launches, their own work on the host per call cost again",
        _NOT_RECORDED_HOST + " (1.25 and 1.31 ms against eager's 0.875, claimed above)",
    ),
    Unshown(
        "As the batch and the width grow, the arithmetic grows and the overhead does not: the versions' times meet.",
        "09_compile has one setting (batch 8, width 64) and 07_slow_loop one width (128), at whose batch 256 the step "
        "still cost what it cost at batch 8",
    ),
    # §4
    Unshown(
        "A CUDA graph records a sequence of kernel launches once — their kernels, arguments and memory addresses — "
        "and replays the whole sequence with one call (graph.replay()): the CPU's cost per step falls from one launch "
        "per kernel to one per graph, and the GPU runs the kernels back to back.",
        "CUDA's programming guide (CUDA Graphs) and torch/cuda/graphs.py; 09_compile shows the step's time falling 25× "
        "under a graph, but " + _NO_COUNT,
    ),
    Unshown(
        "new data must be copied into the tensors the graph read during capture",
        "PyTorch's CUDA semantics notes; the panel's graph version does so, and no record ran one that did not",
    ),
    Unshown(
        "random numbers through PyTorch's generators only, and optimizers made with capturable=True where they keep a "
        "step count (Adam; not SGD, which keeps none).",
        "torch/optim/adam.py (capturable) and torch/optim/sgd.py (none); PyTorch's CUDA semantics notes; no record "
        "captured either",
    ),
    Unshown(
        "it records a graph per input shape (torch.compiler.cudagraph_mark_step_begin() tells it where a step starts) "
        "and falls back to running without graphs where it cannot record one, and logs why.",
        "torch/_inductor/cudagraph_trees.py, and cudagraph_utils.py's log_cudagraph_skip_and_bump_counter; 09_compile "
        "ran reduce-overhead at one shape, and its log holds no skip",
    ),
    Unshown(
        "which is what reduce-overhead does for you, once per shape it meets.",
        "torch/_inductor/cudagraph_trees.py; no record ran reduce-overhead at a second shape",
    ),
    # §5
    Unshown(
        "Triton (Tillet, Kung and Cox, 2019; developed at OpenAI since) is a language embedded in Python for writing GPU "
        "kernels",
        "Tillet, Kung and Cox, MAPL 2019",
    ),
    Unshown(
        "the threads within a block are Triton's to arrange", "Triton's programming model; no record shows threads"
    ),
    Unshown(
        "On a GPU, time it against PyTorch's F.gelu — one kernel written in CUDA C++ by PyTorch's developers — and "
        "against the memory roof, a copy.",
        "aten/src/ATen/native/cuda/ActivationGeluKernel.cu in PyTorch's source (the H100's timings of the three are "
        "claimed with the next paragraph)",
    ),
    Unshown(
        "(the one in libdevice is for GPUs only)",
        "on the build machine (triton 3.7.1) the interpreter raised on libdevice.tanh (triton/runtime/interpreter.py: "
        "extern_elementwise not supported in interpreter mode); the H100 log's Inductor kernel calls libdevice.tanh on "
        "the GPU, and no record ran the interpreter",
    ),
    # the quiz
    Unshown(
        "(reduce-overhead records one per shape)",
        "torch/_inductor/cudagraph_trees.py; no record ran reduce-overhead at a second shape",
    ),
    Unshown("The CPU's cost per step drops from one launch per kernel to one per graph.", _NO_COUNT),
    Unshown('(mode="reduce-overhead" graphs only what torch.compile compiled.)', _REDUCE_OVERHEAD),
    # the guide
    Unshown(
        "the compiled chain is a Triton kernel Inductor writes (torch's Inductor refuses only GPUs under compute "
        "capability 7.0; the T4 is 7.5).",
        "torch/_inductor/exc.py (GPUTooOldForTriton) and scheduler.py; no T4 was recorded (the H100, 9.0, got a Triton "
        "kernel: the log's section 3 cell)",
        GUIDE,
    ),
    Unshown(
        "the copy and the two fused versions should climb towards that at the largest sizes, the eager chain's GB/s "
        "with them and its time about 9× theirs",
        "the T4's data sheet (320 GB/s) and a published device copy (240 GB/s, gpulab.reference.PUBLISHED); no T4 was "
        "recorded",
        GUIDE,
    ),
    Unshown(
        "cuda_graph_step captures the forward, the backward and the optimizer's step as one graph, while compiled_step "
        "compiles only the model, so reduce-overhead graphs its forward and its backward and leaves the loss, zero_grad "
        "and SGD's step to run eagerly.",
        "the lesson's own code; " + _REDUCE_OVERHEAD,
        GUIDE,
    ),
    Unshown(
        "reduce-overhead graphs only the model (its forward and its backward, two graphs) and leaves the loss, "
        "zero_grad and the optimizer's step to launch kernel by kernel.",
        "the lesson's own code; " + _REDUCE_OVERHEAD,
        GUIDE,
    ),
    Unshown(
        "The CPU's cost per step drops to one launch per graph",
        _NO_COUNT + " (the step's 25× fall under a graph is claimed with the next sentence)",
        GUIDE,
    ),
    Unshown(
        "for a size that is not a multiple of its block, its xmask guards the last one",
        "the H100 ran the cell at 4,194,304 elements, a multiple of every block (its log shows xmask all True, "
        "lesson-09-outputs.txt [09-009]); the mask for other sizes is Inductor's code generation, not a record",
    ),
]

# Sentences the records show otherwise: each with the evidence, reported to the lesson's author.
CONTRADICTED: list = []  # sentences the records showed otherwise, until the lesson is corrected: none now

UNSHOWN += CONTRADICTED
