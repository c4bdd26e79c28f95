"""Lesson 05's sentences about what a GPU does, and the H100 SXM records that show them
(see tests/hygiene/test_lessons_agree_with_records.py).

The records: ``05_matmul`` (matmul TFLOP/s by format, n = 64 … 4096), ``05_step`` (the MLP of width 4096,
batch 128, with and without autocast), ``05_underflow`` (the gradients' histogram at scale 2¹⁶ and the
GradScaler's run), ``00_roofline`` (the copy rate measured on the same GPU) and the probe's ``autocast``
(the dtype of each op under CUDA autocast, float16 and bfloat16)."""

from gpulab import reference

from claim_kinds import Claim, Unshown

SOLUTIONS = "solutions/05_amp.ipynb"
H100_SXM = "NVIDIA H100 80GB HBM3"  # the SXM5 board's name; the PCIe card calls itself "NVIDIA H100 PCIe"
LOW = ("torch.float16", "torch.bfloat16")


def _rates(records, n):
    result = records.result("05_matmul")
    at = result["sizes"].index(n)
    return {name: values[at] for name, values in result["tflops"].items()}


def _step(records):
    record = records.record("05_step")
    assert record["device"]["name"] == H100_SXM and record["settings"] == {"width": 4096}
    result = record["result"]
    assert (result["width"], result["batch"], result["dtype"]) == (4096, 128, "bfloat16")
    return result


def _under_autocast(records):
    """{autocast dtype: {op: the dtype it made}} on the H100, from the probe."""
    return records.probe["autocast"]


def _h100_records_beside(records):
    # the panels' defaults on a GPU: largest n 4096, width 4096, loss scale 2¹⁶
    defaults = {"05_matmul": {"max_n": 4096}, "05_step": {"width": 4096}, "05_underflow": {"log2_scale": 16}}
    for name, settings in defaults.items():
        record = records.record(name)
        assert record["device"]["name"] == H100_SXM and record["device"]["type"] == "cuda", name
        assert record["settings"] == settings, (name, record["settings"])


def _tf32_several_times(records):
    assert records.record("05_matmul")["device"]["compute_capability"] == "9.0"  # Hopper: Ampere or newer
    rates = _rates(records, 4096)
    assert rates["tf32"] >= 3 * rates["float32"], rates


def _low_dtype_ops(records):
    for dtype, ops in _under_autocast(records).items():
        assert dtype in LOW and ops["linear"] == ops["matmul"] == dtype, (dtype, ops)


def _float32_ops(records):
    for dtype, ops in _under_autocast(records).items():
        for op in ("mse_loss", "softmax", "layer_norm", "sum"):
            assert ops[op] == "torch.float32", (dtype, op, ops[op])


def _others_follow(records):
    for dtype, ops in _under_autocast(records).items():
        assert ops["relu"] == dtype and ops["add fp32"] == "torch.float32", (dtype, ops)


def _linear_float16(records):
    assert _under_autocast(records)["torch.float16"]["linear"] == "torch.float16"


def _summary_lists(records):
    _float32_ops(records)
    _low_dtype_ops(records)


def _native_bfloat16(records):
    rates = _rates(records, 4096)
    assert rates["bfloat16"] >= 10 * rates["float32"], rates  # tensor cores, not emulation
    assert _step(records)["dtype"] == "bfloat16"  # amp_settings chose it on 9.0


def _sixteen_bits_several_times(records):
    rates = _rates(records, 4096)
    assert min(rates["bfloat16"], rates["float16"]) >= 3 * rates["float32"], rates


def _measured_rates(records):
    rates = _rates(records, 4096)
    assert (round(rates["float32"]), round(rates["tf32"]), round(rates["bfloat16"])) == (51, 394, 779), rates


def _tf32_between(records):
    rates = _rates(records, 4096)
    assert rates["float32"] < rates["tf32"] < min(rates["bfloat16"], rates["float16"]), rates


def _lines_meet(records):
    """At n = 64 the formats the record does not mark within noise meet (within 1.5× of each other); TF32's points
    from n = 64 to 256 are marked within noise (each took over 1.25× the time of TF32's n = 512), and its n = 64
    sits with the others too."""
    result = records.result("05_matmul")
    assert reference.noisy(records.record("05_matmul"), "tflops", "tf32") == {64, 128, 256}
    at_64 = {}
    for name in result["tflops"]:
        sizes, values = records.clean("05_matmul", "tflops", name)
        if name != "tf32":
            assert sizes[0] == 64, (name, sizes)
            at_64[name] = values[0]
    assert set(at_64) == {"float32", "bfloat16", "float16"} and max(at_64.values()) < 1.5 * min(at_64.values()), at_64
    tf32 = result["tflops"]["tf32"][result["sizes"].index(64)]
    assert min(at_64.values()) / 1.5 < tf32 < 1.5 * max(at_64.values()), (tf32, at_64)


def _losses_agree(records):
    losses = _step(records)["loss"]
    plain, amp = losses["float32 (no autocast)"], losses["autocast bfloat16"]
    assert all(abs(a - p) < 1e-2 * p for a, p in zip(amp, plain)), "apart before the third digit"
    assert any(abs(a - p) >= 1e-5 * p for a, p in zip(amp, plain)), "not apart at all"
    assert (f"{amp[-1]:.4f}", f"{plain[-1]:.4f}") == ("0.2894", "0.2893") and len(plain) == 20


def _peak_rises(records):
    peaks = _step(records)["peak_bytes"]
    assert round(100 * peaks["autocast bfloat16"] / peaks["float32 (no autocast)"]) == 140, peaks


def _step_slower(records):
    ms = _step(records)["ms_per_step"]
    plain, amp = ms["float32 (no autocast)"], ms["autocast bfloat16"]
    assert f"{plain / amp:.2f}" == "0.69" and (f"{amp:.2f}", f"{plain:.2f}") == ("1.70", "1.17"), ms
    rates = _rates(records, 4096)
    assert round(rates["bfloat16"] / rates["float32"]) == 15, rates


def _casts_too_small(records):
    width = _step(records)["width"]
    weights = 128 * width + width * width + width * 16
    # a cast reads 4 bytes and writes 2 per weight; a 16-bit gradient is written (2), read (2), written in float32 (4)
    moved_gb = weights * (4 + 2 + 2 + 2 + 4) / 1e9
    copy_gbps = records.result("00_roofline")["ceilings"]["cuda:0"]["copy_gbps"]
    assert records.record("00_roofline")["device"]["name"] == H100_SXM
    assert round(moved_gb, 2) == 0.24 and round(copy_gbps / 1e3, 2) == 2.95, (moved_gb, copy_gbps)
    assert moved_gb / copy_gbps < 1e-4  # seconds: under 0.1 ms
    ms = _step(records)["ms_per_step"]
    assert f"{ms['autocast bfloat16'] - ms['float32 (no autocast)']:.2f}" == "0.53", ms


def _square_1024(records):
    rates = _rates(records, 1024)
    assert f"{rates['bfloat16'] / rates['float32']:.1f}" == "4.1", rates


def _shares(records):
    result = records.result("05_underflow")
    subnormal, normal = result["fp16_smallest_subnormal"], result["fp16_smallest_normal"]
    counts = result["counts"]["fp16 gradients, unscaled"]
    total = sum(counts)
    inside = sum(n for x, n in zip(result["bin_centres"], counts) if subnormal <= x < normal)
    return result, inside / total


def _unscaled_lost_and_subnormal(records):
    result, subnormal_share = _shares(records)
    assert result["flushed"]["fp16 gradients, unscaled"] > 0 and subnormal_share > 0.5, (
        result["flushed"],
        subnormal_share,
    )


def _scaled_normal(records):
    result = records.result("05_underflow")
    assert result["scale"] == 2.0**16
    counts = result["counts"]["fp16 gradients, scaled"]
    normal = sum(n for x, n in zip(result["bin_centres"], counts) if x >= result["fp16_smallest_normal"])
    assert normal / sum(counts) > 0.99 and result["flushed"]["fp16 gradients, scaled"] == 0


def _scaler_trace(records):
    trace = records.result("05_underflow")["trace"]
    scale, skipped, growth, inf_at = trace["scale"], trace["skipped"], trace["growth_interval"], trace["inf_at"]
    assert growth == 4 and [step for step, s in zip(trace["steps"], skipped) if s] == [inf_at]
    for k in range(1, len(scale)):
        if skipped[k - 1]:
            assert scale[k] == scale[k - 1] / 2, (k, scale)  # halved after the inf
        elif scale[k] != scale[k - 1]:
            assert scale[k] == 2 * scale[k - 1], (k, scale)  # doubled, and only after 4 good
            run = 0
            for s, was in zip(scale[k - 1 :: -1], skipped[k - 1 :: -1]):
                if was or s != scale[k - 1]:
                    break
                run += 1
            assert run == growth, (k, run, scale)


# ---- third review -------------------------------------------------------------------------------------------------


def _reductions_and_losses_float32(records):
    for dtype, ops in _under_autocast(records).items():
        assert ops["sum"] == ops["mse_loss"] == "torch.float32", (dtype, ops)


def _tf32_off_for_matmuls_on_for_convolutions(records):
    misc = records.probe["misc"]
    assert misc["float32_matmul_precision"] == "highest" and misc["matmul allow_tf32"] is False, misc
    assert misc["cudnn.allow_tf32"] is True, misc


def _highest_keeps_float32(records):
    """The default, and what it did: the H100 trace of lesson 07 (float32, default settings) ran its matmuls on the
    FP32 units (ffma / simt kernels), none on the tensor cores."""
    _tf32_off_for_matmuls_on_for_convolutions(records)
    trace = records.result("07_profile")["trace"]
    gemms = {e["name"] for e in trace if e["category"] == "kernel" and ("gemm" in e["name"] or "Kernel2" in e["name"])}
    assert gemms and all("ffma" in name or "simt" in name for name in gemms), gemms


def _conv_tf32_default(records):
    assert records.probe["misc"]["cudnn.allow_tf32"] is True


def _sixteen_bit_matmuls_faster(records):
    result = records.result("05_matmul")
    assert records.record("05_matmul")["device"]["name"] == H100_SXM
    tflops = result["tflops"]
    for k, _n in enumerate(result["sizes"]):
        assert min(tflops["bfloat16"][k], tflops["float16"][k]) > tflops["float32"][k], (result["sizes"][k], tflops)


def _overflow_from_2_30(records):
    """At 2¹⁶ nothing overflowed; the unscaled histogram's largest gradients (their bin's lower edge) times 2³⁰
    pass float16's 65504."""
    result = records.result("05_underflow")
    assert result["scale"] == 2.0**16 and result["overflowed"] == 0.0
    centres, counts = result["bin_centres"], result["counts"]["fp16 gradients, unscaled"]
    top = max(k for k, n in enumerate(counts) if n)
    ratio = centres[1] / centres[0]
    lower_edge = centres[top] / ratio**0.5
    assert lower_edge * 2.0**30 > 65504, (lower_edge, centres[top])
    assert centres[top] * ratio**0.5 * 2.0**16 < 65504  # and at 2¹⁶ none could


def _tf32_only_where_allowed(records):
    _highest_keeps_float32(records)
    _tf32_several_times(records)  # switched on (05_matmul's own run), TF32 ran


CLAIMS = [
    Claim(
        "where one was measured with the same settings, show an H100 SXM's results beside yours.", _h100_records_beside
    ),
    Claim(
        "On Ampere and newer GPUs, a float32 matmul can run on the tensor cores with TF32 inputs — several times faster",
        _tf32_several_times,
    ),
    Claim(
        "ops that **run in the low dtype**: `linear`, `matmul`, `conv*`, `bmm`, …: their float32 inputs are cast",
        _low_dtype_ops,
    ),
    Claim(
        "ops that **run in float32**: losses such as `mse_loss` and `cross_entropy`, and on CUDA also `softmax`, "
        "`log_softmax`, `layer_norm`, `exp`, `sum`, …;",
        _float32_ops,
    ),
    Claim(
        "**every other op follows its inputs**: `relu` of a bfloat16 tensor is bfloat16; an addition of bfloat16 and "
        "float32 is float32, by the usual type promotion.",
        _others_follow,
    ),
    Claim(
        "| NVIDIA, compute capability ≥ 8.0 (A100, H100, RTX 30xx/40xx, L4) | bfloat16 | no | native bfloat16 tensor "
        "cores, float32's range |",
        _native_bfloat16,
    ),
    Claim(
        "On a GPU with tensor cores, the 16-bit formats reach several times float32's rate at large n.",
        _sixteen_bits_several_times,
    ),
    Claim(
        "The course's H100 SXM run measured 51 TFLOP/s in float32, 394 in TF32 and 779 in bfloat16 at n = 4096",
        _measured_rates,
    ),
    Claim("TF32 sits between.", _tf32_between),
    Claim(
        "At small n every format is limited by launch overhead and memory, and the lines meet (the H100 SXM's TF32 "
        "points below n = 512 are within noise).",
        _lines_meet,
        about_noise=True,
    ),
    Claim(
        "the 16-bit forward pass changes the losses in the third or fourth digit, not the course of training (on an "
        "H100 SXM, 0.2894 after 20 steps against float32's 0.2893).",
        _losses_agree,
    ),
    Claim(
        "the peak *rises* (about 118 % at width 1024, counted on a CPU; 140 % at width 4096 on an H100 SXM).",
        _peak_rises,
    ),
    Claim(
        "on an H100 SXM at width 4096, batch 128, autocast bfloat16 ran at 0.69× the speed of float32 — 1.70 ms a "
        "step against 1.17 ms — though a 4096 × 4096 bfloat16 matmul alone runs 15× faster there.",
        _step_slower,
    ),
    Claim(
        "The casts cannot be all of it: with the 16-bit gradients they move about 0.24 GB a step, under 0.1 ms at the "
        "2.95 TB/s lesson 00 measured on the same GPU, against the 0.53 ms lost.",
        _casts_too_small,
    ),
    Claim("(even square, at n = 1024, bfloat16 ran only 4.1× faster than float32 on that H100)", _square_1024),
    Claim(
        "Unscaled, a part of the gradients lies below float16's smallest subnormal and would be lost, and most lie in "
        "the subnormal range, keeping only a few digits.",
        _unscaled_lost_and_subnormal,
    ),
    Claim("2¹⁶ moves nearly all of them into float16's normal range.", _scaled_normal),
    Claim(
        "On the right: the scale doubles every 4 good steps (2000 by default), and the injected inf halves it and "
        "skips its step",
        _scaler_trace,
    ),
    Claim("keeps losses (and on CUDA softmax, norms, …) in float32", _summary_lists),
    Claim("linear is on autocast's low-precision list: its inputs are cast to float16.", _linear_float16),
    # third review
    Claim("reductions and losses run in float32", _reductions_and_losses_float32),
    Claim(
        "PyTorch leaves it off for matmuls by default (since 1.12; it is on for cuDNN convolutions).",
        _tf32_off_for_matmuls_on_for_convolutions,
    ),
    Claim('torch.set_float32_matmul_precision("high") # "highest", the default, keeps float32', _highest_keeps_float32),
    Claim(
        'torch.backends.cudnn.conv.fp32_precision = "tf32" # already the default for convolutions', _conv_tf32_default
    ),
    Claim("Time: the 16-bit matmuls are faster (section 6)", _sixteen_bit_matmuls_faster),
    Claim("Push the scale to 2³⁰ and beyond: the largest gradients pass 65504 and overflow", _overflow_from_2_30),
    Claim("TF32 is off for float32 matmuls by default", _tf32_off_for_matmuls_on_for_convolutions),
    Claim("a CUDA GPU of compute capability 8.0 or more: (torch.bfloat16, False)", _native_bfloat16, where=SOLUTIONS),
]

UNSHOWN = [
    Unshown(
        "an NVIDIA GPU from Ampere (compute capability 8.0) on",
        "a rule across GPU generations (NVIDIA's architecture documents); the records hold one GPU, of 9.0",
    ),
    Unshown(
        "It is how Ampere and newer tensor cores read float32 inputs for a matmul: float32's range, float16's 10-bit "
        "mantissa, with the products summed in float32.",
        "the format inside the tensor cores is NVIDIA's description; a timing cannot show it",
    ),
    Unshown(
        "stores weights and activations for the fastest matmuls on GPUs with FP8 tensor cores — Ada (compute "
        "capability 8.9: L4, L40S, RTX 4090), Hopper and newer —",
        "no FP8 matmul was recorded, and no Ada GPU",
    ),
    Unshown(
        "the tensor cores add a matmul's products in float32",
        "NVIDIA's description of the tensor cores; the records hold timings, not the accumulator's format",
    ),
    Unshown(
        "when cuBLAS splits a 16-bit matmul's inner dimension into parts (split-K), it may add the partial sums in "
        "16 bits",
        "PyTorch's numerical-accuracy notes; no record measures the sums' precision",
    ),
    Unshown("On NVIDIA GPUs before Ampere, TF32 itself changes nothing.", "no pre-Ampere GPU was recorded"),
    Unshown(
        "by rounding float32 inputs to TF32's 10 mantissa bits and multiplying in float32 — what the tensor cores do",
        "NVIDIA's description of TF32; the lesson's cell emulates it on the CPU",
    ),
    Unshown(
        "| NVIDIA 7.x (T4, V100) | float16 | **yes** | no bfloat16 hardware: float16 tensor cores only |",
        "no T4 or V100 was recorded",
    ),
    Unshown(
        "`torch.cuda.is_bf16_supported()` returns **True on a T4**: bfloat16 *works* there, emulated in float32 "
        "arithmetic, slower than float32 itself.",
        "no T4 was recorded (the simulated T4 answers as PyTorch does)",
    ),
    Unshown(
        '(On a free Colab T4, choosing bfloat16 by the plain check makes the "mixed precision" run slower than '
        "float32.)",
        "no T4 was recorded",
    ),
    Unshown(
        "against its data sheet's 67 float32 and 989 bfloat16 without sparsity (the H100 PCIe card, on PCIe 5.0: "
        "about 51 and 756).",
        "NVIDIA's H100 data sheet; the recorded rates are the sentence before it",
    ),
    Unshown(
        "The long-dashed lines are an H100 SXM's published rates in each format (PyTorch 2.7, a run posted to "
        "zzc0721/torch-performance-test-data), not this machine's.",
        "a published measurement, labelled as such",
    ),
    Unshown(
        "The gain grows with the work each weight does — larger batches, longer sequences —",
        "the record holds one width and one batch (4096, 128)",
    ),
    Unshown(
        "To see where the time goes, profile the step, as lesson 07 does.",
        "the shipped profile (07_profile) is of another step, without autocast: the cause of the 0.69× is in no "
        "record, and the lesson says so",
    ),
    Unshown(
        "(the backward formulas are the same on every device, and in float16 the same operations run in float16)",
        "the records hold no dispatch trace of a GPU's backward pass; the lesson's trace runs on the CPU, and "
        "PyTorch's derivative formulas (tools/autograd/derivatives.yaml) do not depend on the device",
    ),
    Unshown(
        "each is made by a float16 matmul and only then cast to float32 (section 3).",
        "shown by the lesson's CPU trace under float16 autocast, not by a GPU record",
    ),
    Unshown(
        "In eager mode autocast applies to every operation run inside the region, and a backward pass run there is "
        "no exception",
        "shown on the CPU by the lesson's cell, and in torch.autocast's docstring "
        "(torch/amp/autocast_mode.py); no GPU record runs a backward pass inside autocast",
    ),
    Unshown("TF32: a matmul input format on Ampere+", "NVIDIA's architecture documents"),
    Unshown("float16 with a scaler on a T4 (`is_bf16_supported()` says True there: emulated)", "no T4 was recorded"),
    Unshown(
        "On a T4, `torch.cuda.is_bf16_supported()` returns True. Should you train in bfloat16 there?",
        "no T4 was recorded",
    ),
    Unshown("What does `torch.set_float32_matmul_precision('high')` change on an A100?", "no A100 was recorded"),
    Unshown(
        "an older CUDA GPU (a T4 is 7.5, a V100 7.0): `(torch.float16, True)` — even though "
        "`torch.cuda.is_bf16_supported()` says True there",
        "no T4 or V100 was recorded; the check pretends them",
        where=SOLUTIONS,
    ),
    # third review
    Unshown(
        "Where the column says no, PyTorch may still accept bfloat16 tensors — by emulating them, slower than float32.",
        "no recorded device lacks native bfloat16: the H100 and its Xeon host (AVX-512) both say bf16",
    ),
    Unshown(
        "TF32 costs about three orders of magnitude of accuracy against float32",
        "the lesson's cell emulates TF32 on the CPU; no record measures a TF32 matmul's error on a GPU",
    ),
    Unshown(
        "| Apple MPS | float16 (autocast's default there) | yes, from torch 2.8 |",
        "no Apple GPU ran the course's records",
    ),
    Unshown(
        "the peak drops, by less than half (width 128 here: about 77 % of float32's, counted on a CPU)",
        "counted on a CPU, as it says; the H100's 05_step record is at width 4096 only",
    ),
    Unshown(
        "autocast adds a 16-bit copy of each weight, which backward keeps until it passes the layer, and a 16-bit "
        "gradient of each weight on its way to the float32 one",
        "05_step holds a whole step's peak, not what it is made of (its rise, 140 %, is claimed)",
    ),
    Unshown(
        "at small widths every device is limited by overhead, where mixed precision cannot help",
        "05_step ran at width 4096 only; 05_matmul's small n (claimed: the lines meet) are matmuls, not steps",
    ),
    Unshown(
        "the weights are not touched by a step whose gradients are not finite",
        "05_underflow's trace keeps the scale of each step (its skipped step is read from the halving); no weight "
        "was recorded",
    ),
    Unshown(
        "their gradients arrive in float32, made in 16 bits first",
        "shown by the lesson's CPU trace; no GPU record holds a gradient's dtype or a backward pass's operations",
    ),
    Unshown(
        "Apple's \"mps\": torch.float16, with a scaler only where this torch's GradScaler works on MPS, from torch 2.8 on",
        "no Apple GPU ran the course's records",
        where=SOLUTIONS,
    ),
]
