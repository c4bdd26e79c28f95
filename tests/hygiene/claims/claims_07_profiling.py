"""Lesson 07's sentences about what a GPU does, and the H100 SXM records that show them
(see tests/hygiene/test_lessons_agree_with_records.py).

The records: ``07_profile`` (the panel's profile of two training steps, batch 256, width 2048, float32: the
top operators by self device time and the trace, kept to depth 2), ``07_sawtooth`` (float16 n × n matmuls for
n = 4032 … 4160), ``07_cudnn`` (a conv net's steps with ``cudnn.benchmark`` off and on) and ``07_slow_loop``
(an epoch's time and the profiler's counts for four versions of a loop).
"""

import math
from collections import defaultdict

from gpulab.timing import apart

from claim_kinds import Claim, Unshown

SOLUTIONS = "solutions/07_profiling.ipynb"
GEMM = ("gemm", "sgemm", "Kernel2")  # the matmul kernels' names
AUTOGRAD = ("autograd::", "torch::autograd::")


# ---- helpers ---------------------------------------------------------------------------------------------------


def _h100_sxm(record):
    device = record["device"]
    assert "H100" in device["name"] and "HBM3" in device["name"] and device["multiprocessors"] == 132, device
    assert record["result"]["device"].startswith("cuda"), record["result"]["device"]


def _trace(records):
    record = records.record("07_profile")
    _h100_sxm(record)
    return record["result"]["trace"]


def _on_gpu(event):
    return event["row"].startswith("GPU")


def _kernels(trace):
    return [e for e in trace if e["category"] == "kernel"]


def _gpu_labels(trace):
    return [e for e in trace if e["category"] == "gpu_user_annotation"]


def _inside(event, outer):
    return (
        outer["start_us"] - 0.05 <= event["start_us"]
        and event["start_us"] + event["duration_us"] <= outer["start_us"] + outer["duration_us"] + 0.05
    )


def _cpu_totals(trace):
    totals = defaultdict(float)
    for e in trace:
        if e["category"] == "cpu_op":
            totals[e["name"]] += e["duration_us"]
    return totals


def _is_gemm(name):
    return any(word in name for word in GEMM)


def _rates(records):
    record = records.record("07_sawtooth")
    _h100_sxm(record)
    run = record["result"]
    return dict(zip(run["sizes"], run["gflops"][run["dtype"]]))


def _mean_tflops(rates, belongs):
    chosen = [rate for n, rate in rates.items() if belongs(n)]
    assert chosen
    return sum(chosen) / len(chosen) / 1e3


def _slow_loop(records):
    record = records.record("07_slow_loop")
    _h100_sxm(record)
    result = record["result"]
    steps = result["profiled_samples"] // 8  # the profiled epoch's steps at batch 8
    assert steps == 32
    return result, steps


# ---- 07_profile: what a CUDA profile holds ------------------------------------------------------------------------


def _kernels_memsets_and_launches(records):
    trace = _trace(records)
    categories = {e["category"] for e in trace if _on_gpu(e)}
    assert {"kernel", "gpu_memset"} <= categories, categories
    assert all(e["duration_us"] > 0 for e in trace if _on_gpu(e))  # each with its own start and length
    launches = [e for e in trace if e["name"] == "cudaLaunchKernel"]
    assert launches and all(e["category"] == "cuda_runtime" and not _on_gpu(e) for e in launches)


def _kernel_names(records):
    names = {e["name"] for e in _kernels(_trace(records))}
    for start in (
        "void at::native::vectorized_elementwise_kernel<",
        "sm80_xmma_gemm_",
        "void cutlass::Kernel2<",
        "void cublasLt::splitKreduce_kernel<",
    ):
        assert any(name.startswith(start) for name in names), start
    assert any(e["name"] == "Memset (Device)" and e["category"] == "gpu_memset" for e in _trace(records))


def _self_device_is_own_kernels(records):
    """aten::addmm's self device time (per step) is the sum of the matmul kernels in the GPU-side `forward`
    (the three layers' gemms and a split-K reduction); aten::mm's, of the backward pass's matmul kernels and
    its memset — and each of those kernels is a row of its own too (counted twice)."""
    record = records.record("07_profile")
    trace, result = _trace(records), record["result"]
    per_step = dict(zip(result["ops"], result["ms_per_step"]))
    steps = result["steps"]
    forward = [label for label in _gpu_labels(trace) if label["name"] == "forward"]
    forward_gemm = sum(
        k["duration_us"]
        for k in _kernels(trace)
        if (_is_gemm(k["name"]) or "splitKreduce" in k["name"]) and any(_inside(k, label) for label in forward)
    )
    assert math.isclose(forward_gemm / steps / 1e3, per_step["aten::addmm"], rel_tol=0.02), (forward_gemm, per_step)
    labelled = [k for k in _kernels(trace) + [e for e in trace if e["category"] == "gpu_memset"] if k["depth"] == 0]
    backward_gemm = sum(
        k["duration_us"]
        for k in labelled
        if _is_gemm(k["name"]) or "splitKreduce" in k["name"] or k["category"] == "gpu_memset"
    )
    assert math.isclose(backward_gemm / steps / 1e3, per_step["aten::mm"], rel_tol=0.02), (backward_gemm, per_step)


def _innermost_labels_only(records):
    trace = _trace(records)
    copied = {e["name"] for e in _gpu_labels(trace)}
    assert copied == {"forward", "backward", "Optimizer.step#SGD.step"}, copied
    ran = {e["name"] for e in trace if e["category"] == "user_annotation"}
    assert {"optimizer", "Optimizer.step#SGD.step"} <= ran and any(name.startswith("ProfilerStep#") for name in ran)


def _backward_copy_is_the_first_gradient(records):
    trace = _trace(records)
    for label in (e for e in _gpu_labels(trace) if e["name"] == "backward"):
        inside = [k for k in _kernels(trace) if _inside(k, label)]
        assert len(inside) == 1 and "FillFunctor" in inside[0]["name"], inside
    # The backward pass's matmuls: launched by autograd's thread, under no GPU-side label (depth 0).
    unlabelled = [k for k in _kernels(trace) if k["depth"] == 0]
    assert any(_is_gemm(k["name"]) for k in unlabelled)
    assert any(e["name"] == "cudaLaunchKernel" and e["row"] != "CPU · main thread" for e in trace)


def _span_first_to_last(records):
    trace = _trace(records)
    for label in _gpu_labels(trace):
        inside = [k for k in _kernels(trace) if _inside(k, label)]
        assert inside, label
        start = min(k["start_us"] for k in inside)
        end = max(k["start_us"] + k["duration_us"] for k in inside)
        assert abs(label["start_us"] - start) < 0.1 and abs(label["start_us"] + label["duration_us"] - end) < 0.1, label


def _forward_copy_leads(records):
    record = records.record("07_profile")
    trace, result = _trace(records), record["result"]
    forward_us = sum(e["duration_us"] for e in _gpu_labels(trace) if e["name"] == "forward")
    top_operator_us = result["ms_per_step"][0] * result["steps"] * 1e3
    by_kernel = defaultdict(float)
    for k in _kernels(trace):
        by_kernel[k["name"]] += k["duration_us"]
    assert forward_us > top_operator_us and forward_us > max(by_kernel.values()), (forward_us, top_operator_us)
    cpu_labels = {e["name"] for e in trace if e["category"] == "user_annotation"}
    assert {e["name"] for e in _gpu_labels(trace)} <= cpu_labels  # each appears twice


def _evaluate_function_outranks(records):
    totals = _cpu_totals(_trace(records))
    evaluate = totals["autograd::engine::evaluate_function: AddmmBackward0"]
    operators = {name: us for name, us in totals.items() if "::" in name and not name.startswith(AUTOGRAD)}
    top = max(operators, key=operators.get)
    assert top == "aten::linear" and round(operators[top] / 1e3, 2) == 0.53, (top, operators[top])
    assert round(evaluate / 1e3, 2) == 0.93 and evaluate > operators[top]


def _autograd_rows(records):
    trace, result = _trace(records), records.result("07_profile")
    names = {e["name"] for e in trace if e["category"] == "cpu_op"}
    assert "autograd::engine::evaluate_function: AddmmBackward0" in names and "torch::autograd::AccumulateGrad" in names
    assert not any(op.startswith(AUTOGRAD) for op in result["ops"])  # the panel's operators leave them out


def _kernels_after_their_launch(records):
    trace = _trace(records)
    cpu_forward = [e for e in trace if e["category"] == "user_annotation" and e["name"] == "forward"]
    gpu_forward = [e for e in _gpu_labels(trace) if e["name"] == "forward"]
    assert len(cpu_forward) == len(gpu_forward) == 2
    for cpu, gpu in zip(
        sorted(cpu_forward, key=lambda e: e["start_us"]), sorted(gpu_forward, key=lambda e: e["start_us"])
    ):
        first_op = min((e for e in trace if e["category"] == "cpu_op" and _inside(e, cpu)), key=lambda e: e["start_us"])
        assert gpu["start_us"] > first_op["start_us"], (first_op, gpu)
    assert {e["row"] for e in _kernels(trace)} == {"GPU 0 · stream 7"}


def _gpu_busy_13_percent(records):
    trace = _trace(records)
    work = [e for e in trace if e["category"] in ("kernel", "gpu_memset")]
    for step in (e for e in trace if e["name"].startswith("ProfilerStep#")):
        end = step["start_us"] + step["duration_us"]
        busy = sum(e["duration_us"] for e in work if step["start_us"] <= e["start_us"] < end)
        assert round(busy / step["duration_us"], 2) == 0.13, busy / step["duration_us"]
        assert round(busy / 1e3, 2) == 0.31 and round(step["duration_us"] / 1e3, 1) == 2.4, (busy, step)


def _labels_above_kernels(records):
    trace = _trace(records)
    assert all(label["depth"] == 0 for label in _gpu_labels(trace))
    for label in _gpu_labels(trace):
        assert all(k["depth"] == 1 for k in _kernels(trace) if _inside(k, label))


def _runtime_calls_under_ops(records):
    trace = _trace(records)
    launches = [e for e in trace if e["name"] == "cudaLaunchKernel"]
    assert launches and all(e["depth"] > 0 for e in launches)  # under the op that made them
    # The last event on the host: the profiler's own wait for the GPU as it stops, after the last step. (No step here
    # waits for a stream: the slow loop's counts show those waits.)
    last = max((e for e in trace if not _on_gpu(e)), key=lambda e: e["start_us"])
    steps_end = max(e["start_us"] + e["duration_us"] for e in trace if e["name"].startswith("ProfilerStep#"))
    assert last["name"] == "cudaDeviceSynchronize" and last["start_us"] >= steps_end, last


def _backward_on_its_own_thread(records):
    trace = _trace(records)
    engine = [e for e in trace if e["name"].startswith("autograd::engine::evaluate_function")]
    assert engine and all(e["row"] != "CPU · main thread" and e["depth"] == 0 for e in engine)
    for label in (e for e in trace if e["category"] == "user_annotation" and e["name"] == "backward"):
        mine = [e for e in engine if _inside(e, label)]
        assert mine, "the backward label's thread waits while autograd's thread runs the backward pass"


def _fp32_matmuls_off_the_tensor_cores(records):
    gemms = {k["name"] for k in _kernels(_trace(records)) if _is_gemm(k["name"])}
    assert gemms and all("ffma" in name or "simt" in name for name in gemms), gemms
    assert any(name.startswith("sm80_xmma_gemm_") and "_ffma_" in name for name in gemms)
    assert any("cutlass_80_simt_sgemm_" in name for name in gemms)


def _kernels_per_shape_and_split_k(records):
    kernels = _kernels(_trace(records))
    tiles = {name.split("tilesize")[1].split("_")[0] for name in (k["name"] for k in kernels) if "tilesize" in name}
    tiles |= {name.split("sgemm_")[1].split("_")[0] for name in (k["name"] for k in kernels) if "simt_sgemm_" in name}
    assert len(tiles) >= 4, tiles  # other tile sizes, per shape
    ordered = sorted(kernels, key=lambda k: k["start_us"])
    reductions = [i for i, k in enumerate(ordered) if "splitKreduce" in k["name"]]
    assert reductions and all(_is_gemm(ordered[i - 1]["name"]) for i in reductions)  # a gemm's parts, added up after


# ---- 07_sawtooth ------------------------------------------------------------------------------------------------


def _sawtooth_is_h100_float16_4032_to_4160(records):
    record = records.record("07_sawtooth")
    _h100_sxm(record)
    assert record["result"]["dtype"] == "float16" and record["result"]["sizes"] == list(range(4032, 4161))


def _alignment_bands(records):
    rates = _rates(records)
    eights = _mean_tflops(rates, lambda n: n % 8 == 0)
    evens = _mean_tflops(rates, lambda n: n % 2 == 0 and n % 8)
    odds = _mean_tflops(rates, lambda n: n % 2)
    assert math.isclose(eights, 690, rel_tol=0.02) and math.isclose(evens, 200, rel_tol=0.05), (eights, evens)
    assert math.isclose(odds, 130, rel_tol=0.05), odds
    assert round(eights / odds) == 5, eights / odds


def _sixty_four_six_percent_within_noise(records):
    """Multiples of 64 averaged 6% over the other multiples of 8: less than two unspread numbers must differ by
    (10% of the larger, gpulab.timing.apart), so no difference the record can show."""
    rates = _rates(records)
    sixty_fours = _mean_tflops(rates, lambda n: n % 64 == 0)
    other_eights = _mean_tflops(rates, lambda n: n % 8 == 0 and n % 64)
    assert round((sixty_fours / other_eights - 1) * 100) == 6, (sixty_fours, other_eights)
    assert not apart(sixty_fours, None, other_eights, None), (sixty_fours, other_eights)


def _h100_sxm_132_sms(records):
    for name in ("07_sawtooth", "07_profile"):
        _h100_sxm(records.record(name))


def _step_past_4096_only_unaligned(records):
    rates = _rates(records)
    assert math.ceil(4096 / 128) ** 2 == 1024 and math.ceil(1024 / 132) == 8  # the model: 8 waves, then 9
    assert math.ceil(4097 / 128) ** 2 == 1089 and math.ceil(1089 / 132) == 9

    def sides(belongs):
        return (
            round(_mean_tflops(rates, lambda n: belongs(n) and n <= 4096)),
            round(_mean_tflops(rates, lambda n: belongs(n) and n > 4096)),
        )

    assert sides(lambda n: n % 2) == (135, 119)
    below, above = sides(lambda n: n % 2 == 0 and n % 8)  # the other unaligned sizes step too
    assert above < 0.9 * below, (below, above)
    assert sides(lambda n: n % 8 == 0) == (686, 687)


def _sawtooth_falls_past_each_multiple_of_8(records):
    rates = _rates(records)
    for n in rates:
        if n % 8 == 0 and n + 1 in rates:
            assert rates[n] > 2 * rates[n + 1], n


def _jumps_at_8(records):
    _sawtooth_falls_past_each_multiple_of_8(records)
    rates = _rates(records)
    assert _mean_tflops(rates, lambda n: n % 8 == 0) > 3 * _mean_tflops(rates, lambda n: n % 8)


def _second_plot_h100_4096_float16(records):
    record = records.record("07_sawtooth")
    _h100_sxm(record)
    assert record["result"]["middle"] == 4096 and record["result"]["dtype"] == "float16"


# ---- 07_cudnn ---------------------------------------------------------------------------------------------------


def _cudnn(records):
    record = records.record("07_cudnn")
    _h100_sxm(record)
    result = record["result"]
    n = result["steps_per_size"]
    firsts = {name: values[::n] for name, values in result["ms"].items()}
    rests = {name: [values[k + 1 : k + n] for k in range(0, len(values), n)] for name, values in result["ms"].items()}
    return result, firsts, rests


def _cudnn_first_steps(records):
    result, firsts, _ = _cudnn(records)
    assert len(result["image_sizes"]) == 3
    on, off = firsts["benchmark on"], firsts["benchmark off"]
    assert round(on[0] / 1e3) == 4 and all(0.7 < ms / 1e3 < 1.3 for ms in on[1:]), on
    assert round(min(off)) == 12 and round(max(off)) == 73, off


def _cudnn_after_the_first(records):
    result, firsts, rests = _cudnn(records)
    assert all(on > 10 * off for on, off in zip(firsts["benchmark on"], firsts["benchmark off"]))
    for on, off in zip(rests["benchmark on"], rests["benchmark off"]):
        assert min(on) <= min(off) * 1.05, (on, off)


def _cudnn_estimate_comment(records):
    _, firsts, _ = _cudnn(records)
    on = firsts["benchmark on"]
    assert round(on[0] / 1e3) == 4 and all(round(ms / 1e3, 1) == 0.9 for ms in on[1:]), on


# ---- 07_slow_loop -----------------------------------------------------------------------------------------------


def _syncs_per_step(records):
    """As written: 4 waits a step (.item(), and the batch's, the targets' and the linspace's copies) and the
    profiler's own; loop fixed: the linspace's copy each step, the two copies of the data set and the profiler's."""
    result, steps = _slow_loop(records)
    syncs = result["counts"]["syncs"]
    assert syncs[0] == steps * (1 + 1 + 2) + 1 and syncs[1] == steps * 1 + 2 + 1 and syncs[2] == 2 + 1, syncs
    assert result["counts"][".to calls"][0] == 3 * steps  # three copies a step, each a wait
    assert syncs[0] > steps  # more than the 32 value reads:
    # the runtime's waits, copies included


def _counted_129_35_3_3(records):
    result, _ = _slow_loop(records)
    assert result["counts"]["syncs"] == [129, 35, 3, 3]
    _runtime_calls_under_ops(records)  # the profiler's wait as it stops


def _counts_fall_where_fixes_land(records):
    result, steps = _slow_loop(records)
    counts = result["counts"]
    assert counts[".to calls"][0] == 3 * steps and counts[".to calls"][-1] == 2
    assert counts["tensors made in forward"] == [steps, steps, 0, 0]
    assert counts["optimizer steps"][0] / counts["optimizer steps"][-1] == 32


def _epoch_times(records):
    result, _ = _slow_loop(records)
    assert result["samples"] == 1024
    ms = result["ms_per_epoch"]["one epoch"]
    assert [round(ms[0]), round(ms[1]), round(ms[2]), round(ms[3], 1)] == [194, 189, 138, 4.2], ms
    assert ms[2] - ms[3] > ms[0] - ms[2]  # the batch: most of the gain


# ---- the solutions' text ---------------------------------------------------------------------------------------


def _kernel_rows_with_colons_and_innermost_copies(records):
    trace = _trace(records)
    assert any(k["name"].startswith("void at::native::") for k in _kernels(trace))
    assert any(k["name"].startswith("void cutlass::Kernel2<") for k in _kernels(trace))
    _innermost_labels_only(records)


def _gpu_rows_on_the_gpu(records):
    trace = _trace(records)
    assert all(_on_gpu(e) for e in trace if e["category"] in ("kernel", "gpu_memset", "gpu_user_annotation"))
    assert not any(_on_gpu(e) for e in trace if e["category"] in ("cpu_op", "user_annotation", "cuda_runtime"))


def _copy_has_the_label_name(records):
    trace = _trace(records)
    cpu_labels = {e["name"] for e in trace if e["category"] == "user_annotation"}
    assert _gpu_labels(trace) and all(label["name"] in cpu_labels for label in _gpu_labels(trace))
    _gpu_rows_on_the_gpu(records)


# ---- third review ---------------------------------------------------------------------------------------------------


def _bands_per_thread_and_stream(records):
    trace = _trace(records)
    rows = {e["row"] for e in trace}
    cpu = {row for row in rows if row.startswith("CPU · ")}
    gpu = {row for row in rows if row.startswith("GPU ")}
    assert rows == cpu | gpu and len(cpu) >= 2 and "CPU · main thread" in cpu, rows  # the main thread, autograd's
    assert gpu == {"GPU 0 · stream 7"}, gpu  # one stream ran the kernels


def _item_waits_every_step(records):
    """As written: three copies a step (.to calls), each a wait, and one wait more a step: the .item(); and the
    profiler's own as it stops. A stream synchronisation waits for everything queued on the stream."""
    result, steps = _slow_loop(records)
    syncs, copies = result["counts"]["syncs"][0], result["counts"][".to calls"][0]
    assert copies == 3 * steps and syncs - copies - 1 == steps, (syncs, copies)


def _loss_kept_on_the_device_no_wait(records):
    """With the buffer (and the loss added up on the device), the only waits are the two copies of the data set before
    the loop and the profiler's: none in the loop."""
    result, steps = _slow_loop(records)
    assert result["counts"]["syncs"][2:] == [3, 3] and result["counts"][".to calls"][2:] == [2, 2], result["counts"]


def _a_copy_and_a_wait_per_forward(records):
    """Loop fixed, buffer not yet: linspace once a step, and one wait a step beside the data set's two copies and the
    profiler's; with the buffer both go."""
    result, steps = _slow_loop(records)
    counts = result["counts"]
    assert counts["tensors made in forward"][1] == steps and counts["syncs"][1] == steps + 2 + 1, counts
    assert counts["tensors made in forward"][2] == 0 and counts["syncs"][2] == 2 + 1, counts


def _the_search_once_per_shape(records):
    """cudnn.benchmark on: each size's first step is the slow one (the search), every later step of it is not."""
    result, firsts, rests = _cudnn(records)
    for first, rest in zip(firsts["benchmark on"], rests["benchmark on"]):
        assert first > 100 * max(rest), (first, rest)


def _alignment_first_waves_second(records):
    _jumps_at_8(records)
    _step_past_4096_only_unaligned(records)


def _default_highest_off_the_tensor_cores(records):
    misc = records.probe["misc"]
    assert misc["float32_matmul_precision"] == "highest" and misc["matmul allow_tf32"] is False, misc
    _fp32_matmuls_off_the_tensor_cores(records)
    tflops = records.result("05_matmul")["tflops"]  # allowed, in lesson 05's panel, TF32 ran
    assert tflops["tf32"][-1] > 3 * tflops["float32"][-1], tflops


def _cpu_and_gpu_tensors_do_not_meet(records):
    error = records.probe["errors"]["two devices"]
    assert error["type"] == "RuntimeError" and "found at least two devices, cuda:0 and cpu" in error["message"], error


CLAIMS = [
    # §0–2: what a CUDA profile holds (P3: every sentence about a CUDA trace, held to 07_profile's trace)
    Claim(
        "CUDA adds, through NVIDIA's CUPTI library, what ran on the GPU — kernels and memsets, each with its own "
        "start and end on the GPU's clock — and the CUDA runtime's calls that started them on the host "
        "(cudaLaunchKernel).",
        _kernels_memsets_and_launches,
    ),
    Claim(
        "the operators and labels the CPU ran, as on a CPU, and the CUDA runtime's calls the CPU made for them "
        "(cudaLaunchKernel, …).",
        _kernels_memsets_and_launches,
    ),
    Claim("An operator's Self CUDA is the GPU time of the kernels it launched itself", _self_device_is_own_kernels),
    Claim(
        "The H100 trace of this step holds void at::native::vectorized_elementwise_kernel<…>, sm80_xmma_gemm_…, "
        "void cutlass::Kernel2<…> and void cublasLt::splitKreduce_kernel<…> kernels and a Memset (Device).",
        _kernel_names,
    ),
    Claim(
        "A kernel's row adds up every launch of it, by whichever op, so the same GPU time is counted twice: in the "
        "op's row and in the kernel's.",
        _self_device_is_own_kernels,
    ),
    Claim(
        "whose CUDA time is the span of the GPU work launched inside it, from its first kernel's start to its last "
        "one's end.",
        _span_first_to_last,
    ),
    Claim("Each kernel goes to the innermost label open on the thread that launched it.", _innermost_labels_only),
    Claim(
        "In the H100 trace of this step (the panel below) only forward, backward and Optimizer.step#SGD.step have a "
        "GPU-side copy: ProfilerStep* and optimizer launch nothing outside the labels they hold.",
        _innermost_labels_only,
    ),
    Claim(
        "And backward's copy covers only what the main thread launched, the gradient of ones that starts the "
        "backward pass: autograd's own thread (see the trace below) launches the rest, outside every label.",
        _backward_copy_is_the_first_gradient,
    ),
    Claim(
        "So, sorted by self_device_time_total, the GPU-side forward leads — in the H100 trace it spans the whole "
        "forward pass on the GPU, gaps included, longer than any operator's or kernel's time — then kernels and "
        "operators follow, and a label with a GPU-side copy appears twice, once with CPU times and once with CUDA "
        "times.",
        _forward_copy_leads,
    ),
    Claim(
        "apart from autograd's own rows, which have one too: autograd::engine::evaluate_function: AddmmBackward0",
        _autograd_rows,
    ),
    Claim(
        "in the H100 trace of this step, autograd::engine::evaluate_function: AddmmBackward0 took 0.93 ms of CPU "
        "time over its two steps, more than any operator (aten::linear, 0.53 ms).",
        _evaluate_function_outranks,
    ),
    Claim(
        "On CUDA the picture has a second part: the kernels on the GPU's stream, where the time really goes, usually "
        "later than the CPU op that launched them",
        _kernels_after_their_launch,
    ),
    Claim(
        "The H100 trace of the panel below is of the first kind: its kernels kept the GPU busy for 13% of each "
        "step, 0.31 ms of 2.4.",
        _gpu_busy_13_percent,
    ),
    Claim("the GPU's row holds the GPU-side copies of labels above the kernels they launched", _labels_above_kernels),
    Claim(
        "the CPU rows hold the CUDA runtime's calls under the op that made them (cudaLaunchKernel; "
        "cudaStreamSynchronize where the host waits for a stream, and the cudaDeviceSynchronize with which the "
        "profiler waits for the GPU as it stops)",
        _runtime_calls_under_ops,
    ),
    Claim(
        "and the backward pass's ops have a CPU row of their own — autograd runs the backward of CUDA work on a "
        "thread of its own for each GPU — not under your backward label, whose thread waits for it.",
        _backward_on_its_own_thread,
    ),
    Claim("on CUDA below a label's GPU-side copy (forward), beside the kernels' own rows", _forward_copy_leads),
    # §4 and §6: the waits, counted on the H100 (07_slow_loop)
    Claim(
        "PyTorch waits for the stream after every copy between host and device made without non_blocking=True",
        _syncs_per_step,
    ),
    Claim("on CUDA a synchronisation too, as every copy made without non_blocking is;", _syncs_per_step),
    Claim("(on CUDA, two more synchronisations per step);", _syncs_per_step),
    Claim(
        "On CUDA they fall in two stages: as written, each step waits four times (the .item() and three copies to the "
        "device: the batch, its targets, the linspace); with the loop fixed, the linspace's copy still waits once per "
        "step; with the buffer, only the two copies of the data set, before the loop, are left.",
        _syncs_per_step,
    ),
    Claim(
        "Each CUDA count has one wait more: the profiler's own torch.cuda.synchronize() as it stops (an H100 SXM "
        "counted 129, 35, 3 and 3).",
        _counted_129_35_3_3,
    ),
    Claim(
        "The counts fall exactly where each fix lands: .to calls from three per step to two per epoch, the linspace "
        "in forward to none, optimizer steps by 32×.",
        _counts_fall_where_fixes_land,
    ),
    Claim(
        "at batch 8 the batch is still most of the gain: on an H100 SXM an epoch of 1024 samples took 194 ms as "
        "written, 189 with the loop fixed, 138 with the buffer and 4.2 with batch 256.",
        _epoch_times,
    ),
    Claim(
        "show up as aten::_local_scalar_dense and copies in any profile, and as cudaStreamSynchronize on CUDA",
        _syncs_per_step,
    ),
    # §5: shapes (07_sawtooth), TF32 (07_profile's kernels), waves
    Claim(
        "How much that matters, the course's H100 SXM run shows: float16 n × n matmuls for every n from 4032 to 4160",
        _sawtooth_is_h100_float16_4032_to_4160,
    ),
    Claim(
        "A multiple of 8 ran at about 690 TFLOP/s, an even n that is not one at about 200, and an odd n at about "
        "130: one row or column more or less made the same matmul five times slower.",
        _alignment_bands,
    ),
    Claim(
        "Multiples of 64 averaged about 6% more than the other multiples of 8, within noise.",
        _sixty_four_six_percent_within_noise,
    ),
    Claim(
        "Multiples of 8 (16 bytes) are the minimum for 16-bit types; the H100 record shows no more than noise beyond "
        "them.",
        _sixty_four_six_percent_within_noise,
    ),
    Claim(
        'By default torch.get_float32_matmul_precision() is "highest", which keeps float32 matmuls off the tensor '
        "cores: the H100 trace of section 3 ran its float32 matmuls as sm80_xmma_gemm_…_ffma_… and "
        "cutlass_80_simt_sgemm_… kernels, on the plain FP32 units.",
        _fp32_matmuls_off_the_tensor_cores,
    ),
    Claim("n × n output on an H100 SXM (132 SMs; the PCIe card has 114), 128 × 128 tiles", _h100_sxm_132_sms),
    Claim(
        "That is a model of one fixed kernel, and cuBLAS does not run one: it picks a kernel per shape — other tile "
        "sizes, or split-K, which cuts the shared dimension into parts computed side by side and adds them up after "
        "(the cublasLt::splitKreduce_kernel rows of the H100 trace in section 3).",
        _kernels_per_shape_and_split_k,
    ),
    Claim(
        "In the H100 run, the step the model predicts just past n = 4096 (33 × 33 tiles of 128 instead of 32 × 32: a "
        "ninth wave) shows only in the slow, unaligned sizes — odd n averaged 135 TFLOP/s up to 4096 and 119 past "
        "it — while the multiples of 8 ran as fast past 4096 as up to it (686 and 687 TFLOP/s on average).",
        _step_past_4096_only_unaligned,
    ),
    Claim(
        "Throughput against n is a sawtooth: high at multiples of 8, low just past them.",
        _sawtooth_falls_past_each_multiple_of_8,
    ),
    Claim("On a GPU, the rate jumps at multiples of 8 and falls just after them", _jumps_at_8),
    Claim(
        "Without a GPU, a second plot shows an H100 SXM's run around n = 4096 in float16.",
        _second_plot_h100_4096_float16,
    ),
    # §5: cudnn.benchmark (07_cudnn)
    Claim(
        "On CUDA, with the flag on, the first step of every new image size is slow — cuDNN is timing its algorithms "
        "— and the steps after it are as fast as, or faster than, with the flag off.",
        _cudnn_after_the_first,
    ),
    Claim(
        "At the default three sizes, the dashed curves are an H100 SXM's: with the flag on, its first step of each "
        "new size took about a second (4 s for the very first), against 12 to 73 ms with it off.",
        _cudnn_first_steps,
    ),
    Claim("benchmark's trials of each new shape: an H100 took 4 s, then 0.9 s each", _cudnn_estimate_comment),
    # The solutions' text
    Claim(
        "A CUDA profile also has a row per kernel — often with :: too: void at::native::…, void cutlass::Kernel2<…> — "
        "and a GPU-side copy of each label that launched GPU work itself (a kernel goes to the innermost label "
        "around its launch).",
        _kernel_rows_with_colons_and_innermost_copies,
        where=SOLUTIONS,
    ),
    Claim(
        "They ran on the GPU (device_type is DeviceType.CUDA, CPU times 0) and are not operators either.",
        _gpu_rows_on_the_gpu,
        where=SOLUTIONS,
    ),
    Claim(
        "On CUDA a label that launched GPU work itself has a second row, its GPU-side copy, with the same name",
        _copy_has_the_label_name,
        where=SOLUTIONS,
    ),
    # third review
    Claim("one band per thread (and per GPU stream on CUDA)", _bands_per_thread_and_stream),
    Claim(
        "On a GPU, anything that needs a tensor's value on the host waits for every kernel queued before it",
        _item_waits_every_step,
    ),
    Claim("waits for the device, every step", _item_waits_every_step),
    Claim("(1) the host waits every step", _item_waits_every_step),
    Claim("queued on the device, no wait", _loss_kept_on_the_device_no_wait),
    Claim("cudaStreamSynchronize, after each of these and each copy without non_blocking", _syncs_per_step),
    Claim("a copy per call, and a cudaStreamSynchronize", _a_copy_and_a_wait_per_forward),
    Claim("PyTorch times them the first time it meets a new input shape", _cudnn_after_the_first),
    Claim("costs a slow step every time a new shape arrives", _cudnn_after_the_first),
    Claim("When input shapes change often: each new shape is benchmarked again", _cudnn_first_steps),
    Claim("The search runs once per new shape", _the_search_once_per_shape),
    Claim(
        "dimensions in multiples of 8 — alignment first, waves second",
        _alignment_first_waves_second,
    ),
    Claim(
        'matmuls use TF32 only where you allow it (torch.set_float32_matmul_precision("high"); the default, '
        '"highest", does not)',
        _default_highest_off_the_tensor_cores,
        where=SOLUTIONS,
    ),
    Claim(
        "a tensor made on the CPU and one on meta cannot meet, as with a GPU",
        _cpu_and_gpu_tensors_do_not_meet,
        where=SOLUTIONS,
    ),
]

UNSHOWN = [
    Unshown(
        "Copies between host and device are GPU rows of their own too (Memcpy HtoD, Memcpy DtoH).",
        "the recorded training step copies nothing (07_profile's trace has no gpu_memcpy row), and 07_slow_loop "
        "keeps counts, not rows; the rows are CUPTI's memcpy activity, recorded with ProfilerActivity.CUDA",
    ),
    Unshown(
        "or on Apple's MPS (whose GPU work this profiler does not see)",
        "no Apple GPU ran the course's records; ProfilerActivity has no MPS member (torch/profiler)",
    ),
    Unshown(
        "the CPU only queues kernels (lesson 02) and runs ahead",
        "how CUDA launches work (lesson 02); the shipped 07 trace is of a launch-bound step whose GPU keeps up "
        "with the CPU, so it shows kernels after their launches (claimed in section 2) but no CPU far ahead",
    ),
    Unshown(
        "(on CUDA, CPU time is the time to launch the work)",
        "the trace shows cudaLaunchKernel under the ops, but no record separates launching from an op's other "
        "host work",
    ),
    Unshown(
        "(Self CPU Mem, and Self CUDA Mem on CUDA; negative numbers are memory freed)",
        "no shipped record profiles memory (07_profile ran without profile_memory); the columns are "
        "torch/autograd/profiler_util.py's",
    ),
    Unshown(
        "on Apple's MPS the model's tensors are in neither column.",
        "torch/autograd/profiler.py: _cpu_memory_usage counts CPU/MKLDNN/IDEEP records, _device_memory_usage "
        "CUDA/PrivateUse1/HIP/XPU; no MPS record",
    ),
    Unshown(
        "copies run aten::_to_copy (on CUDA, with a Memcpy DtoH or Memcpy HtoD on the GPU row and, without "
        "non_blocking, a cudaStreamSynchronize on the CPU's)",
        "no shipped trace holds a copy; the waits the copies cause are counted in 07_slow_loop (claimed in §6)",
    ),
    Unshown(
        "It covers the operations PyTorch knows to synchronise — .item(), copies between host and device made "
        "without non_blocking=True, nonzero — not an explicit torch.cuda.synchronize(), which you wrote on purpose.",
        "set_sync_debug_mode ran in no record; c10/cuda/CUDAFunctions.h (warn_or_error_on_sync) is the source",
    ),
    Unshown(
        "cuBLAS uses them best when the dimensions of a matmul — batch × features, the features of each layer, a "
        "vocabulary — are multiples of 8 for 16-bit types (16 bytes), of 4 for float32 run as TF32, and of 16 for "
        "8-bit types.",
        "NVIDIA's matrix-multiplication performance guide; the records show only the float16 part (the next "
        "sentences' claims), no TF32 or 8-bit sawtooth",
    ),
    Unshown(
        "A layer of 50257 outputs (GPT-2's vocabulary) pads to 50304, a multiple of 64, for 0.1% more parameters "
        "and a faster matmul.",
        "arithmetic, and the float16 sawtooth around 4096; no record timed a 50257-wide layer",
    ),
    Unshown(
        "Float32 matmuls run as TF32 (A100 and newer) only where you allow it, with "
        'torch.set_float32_matmul_precision("high"); cuDNN\'s convolutions use TF32 by default.',
        "NVIDIA's data sheets (TF32 from Ampere) and torch's defaults (torch.backends.cudnn.allow_tf32 is True); "
        "no 07 record ran TF32 or looked at a convolution's math mode",
    ),
    Unshown(
        "n × n output on an H100 SXM (132 SMs; the PCIe card has 114), 128 × 128 tiles",
        "the 132 SMs are the record's (claimed); the H100 PCIe's 114 is NVIDIA's data sheet, no PCIe card ran",
    ),
    Unshown(
        "It matters most on GPUs with tensor cores under mixed precision", "no record timed channels_last on a GPU"
    ),
    Unshown(
        "CUDA graphs record a whole sequence of kernel launches once and replay it with one launch, removing the "
        "per-op CPU overhead",
        "no record ran CUDA graphs (torch.cuda.graphs is the source)",
    ),
    Unshown(
        'mode="max-autotune" searches longer for faster kernels, and on a GPU adds CUDA graphs too',
        "torch/_inductor's modes (list_mode_options); no record compiled on the GPU",
    ),
    Unshown(
        "The profiler's device times come from the GPU itself.",
        "CUPTI's activity timestamps; a record holds the times, not where they were taken",
    ),
    Unshown(
        "Memcpy HtoD on the GPU row, and a cudaStreamSynchronize",
        "no shipped trace holds a copy; 07_slow_loop counts the waits (claimed in §6)",
    ),
    Unshown("many short kernels, gaps between them", "07_slow_loop keeps counts and times, not its trace"),
    # third review
    Unshown(
        "with CUDA times only (its CPU columns are 0)",
        "the record keeps the trace's events (the kernels on the GPU's row, claimed) and the operators' device "
        "times, not the key_averages table's CPU columns",
    ),
    Unshown(
        "There, torch.mps.current_allocated_memory() before and after a step gives the bytes, and "
        "torch.mps.profiler.profile() records the GPU's work as signposts for Xcode's Instruments.",
        "no Apple GPU ran the course's records",
    ),
    Unshown(
        "the CPU runs ahead and the GPU catches up",
        "the shipped 07 trace is of a launch-bound step whose GPU keeps up with the CPU: kernels after their "
        "launches (claimed), but no CPU far ahead",
    ),
    Unshown(
        "a full GPU row with the CPU waiting is a healthy, GPU-bound step",
        "the only trace (07_profile) is of the other kind, its GPU busy 13% of each step (claimed)",
    ),
    Unshown(
        "the matmuls grow with both; the optimizer's ops only with the width; the small ops with nothing",
        "07_profile holds one setting (batch 256, width 2048)",
    ),
    Unshown(
        "ops whose output size depends on the data — torch.nonzero, indexing with a boolean mask, torch.unique — "
        "because the host must learn the size before it can allocate",
        "no record runs them on a GPU; 07_slow_loop's waits are value reads and copies",
    ),
    Unshown(
        "cuDNN keeps the plan it chose for each shape for the whole process",
        "07_cudnn runs each shape once per setting; no record repeats a shape in a later run",
    ),
    Unshown(
        "Benchmark mode pays off when shapes repeat",
        "07_cudnn shows the steps after the first as fast as or a little faster than with the flag off (claimed), "
        "over 5 steps a size, which never repay the search: the payoff over a long run is not recorded",
    ),
    Unshown("with fixed shapes it pays off", "as for section 5's 'Benchmark mode pays off when shapes repeat'"),
    Unshown(
        "That skips one fill kernel per parameter",
        "no record ran zero_grad(set_to_none=False) on the GPU; the 07 trace's optimizer label launched no kernel "
        "outside the step (claimed), which shows the None case only",
    ),
    Unshown("what tensor-core convolutions read best", "no record timed a convolution in channels_last on a GPU"),
    Unshown("(with Inductor: Triton kernels on a GPU, C++ on a CPU)", "no record compiled on the GPU"),
    Unshown(
        "On a GPU each sync stalls the queue and each copy crosses the PCIe link",
        "07_slow_loop counts the waits and times whole epochs; no record times one sync's stall (the host link, "
        "PCIe 5.0 ×16, is the run README's)",
    ),
    Unshown(
        'torch.cuda.set_sync_debug_mode("warn") reports them on CUDA',
        "set_sync_debug_mode ran in no record; c10/cuda/CUDAFunctions.h (warn_or_error_on_sync) is the source",
    ),
    Unshown("CUDA graphs for small launch-bound steps", "no record ran CUDA graphs"),
    Unshown(
        "(device_type is DeviceType.CUDA, CPU times 0)",
        "the record's trace places each event on a CPU or GPU row by its category, and keeps no key_averages "
        "columns: the rows on the GPU are claimed, device_type and the CPU times are not recorded",
        where=SOLUTIONS,
    ),
    Unshown(
        "device_type DeviceType.CUDA and CPU times of 0",
        "as for exercise 1's '(device_type is DeviceType.CUDA, CPU times 0)'",
        where=SOLUTIONS,
    ),
    Unshown(
        "Tensor cores work on tiles whose rows are 16 bytes or more: dimensions should be multiples of 8 for "
        "16-bit types (float16, bfloat16), 4 for float32, and 16 for 8-bit types",
        "NVIDIA's matrix-multiplication performance guide; the records show only float16's multiples of 8 "
        "(07_sawtooth, claimed in the lesson)",
        where=SOLUTIONS,
    ),
]
