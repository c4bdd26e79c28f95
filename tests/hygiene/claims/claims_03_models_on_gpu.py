"""Lesson 03's sentences about what a GPU does, and the H100 SXM records that show them
(see tests/hygiene/test_lessons_agree_with_records.py)."""

from gpulab import reference
from gpulab.timing import apart

from claim_kinds import Claim, Unshown

MiB = 2**20


def _h100_sxm(records, name):
    record = records.record(name)
    assert record["device"]["name"] == "NVIDIA H100 80GB HBM3" and record["device"]["type"] == "cuda", record["device"]


def _copy_seconds(records, nbytes):
    """(pageable copy, pin_memory() + pinned copy) host→device, in seconds, from lesson 02's record."""
    result = records.result("02_bandwidth")
    index = result["sizes"].index(nbytes)
    pageable = nbytes / (result["gbps"]["host→device pageable"][index] * 1e9)
    pinned = result["pin_seconds"][index] + nbytes / (result["gbps"]["host→device pinned"][index] * 1e9)
    return pageable, pinned


def _pinning_paid(records):
    _h100_sxm(records, "02_bandwidth")
    gains = [pageable / pinned for pageable, pinned in (_copy_seconds(records, n) for n in (MiB, 4 * MiB, 16 * MiB))]
    assert round(min(gains), 1) == 2.0 and round(max(gains), 1) == 4.4, gains


def _small_copies(records):
    # pinned: pin_memory() and the copy from pinned memory together, as the loader's pinning costs
    times = [t * 1e6 for n in (16 * 2**10, 64 * 2**10) for t in _copy_seconds(records, n)]
    assert round(min(times)) == 12 and round(max(times)) == 22, times
    gains = [round(pageable / pinned, 1) for pageable, pinned in (_copy_seconds(records, n) for n in (MiB, 4 * MiB))]
    assert gains == [2.0, 4.4], gains


def _a_few_mib_repaid(records):
    for nbytes in (MiB, 4 * MiB):
        pageable, pinned = _copy_seconds(records, nbytes)
        assert pinned < pageable


def _throughput(records):
    _h100_sxm(records, "03_throughput")
    result = records.result("03_throughput")
    assert result["width"] == 512 and result["batches"][-1] == 1024
    rates, batches = result["samples_per_s"]["cuda:0"], result["batches"]
    assert all(1.75 < b / a < 2.25 for a, b in zip(rates, rates[1:])), "samples/s doubles with the batch"
    step_ms = [batch / rate * 1e3 for batch, rate in zip(batches, rates)]
    assert all(1.05 < ms < 1.35 for ms in step_ms) and round(step_ms[-1], 1) == 1.2, step_ms


def _cpu_throughput(records):
    """The CPU's batches and samples/s, less the points its record marks within noise (batches 8, 64 and 128: each
    step took over 1.25× a larger batch's)."""
    return records.clean("03_throughput", "samples_per_s", "cpu")


def _gpu_keeps_climbing(records):
    result = records.result("03_throughput")
    rates, batches = result["samples_per_s"]["cuda:0"], result["batches"]
    cpu_batches, cpu = _cpu_throughput(records)
    assert all(b > a for a, b in zip(rates, rates[1:]))
    # longer than the CPU: over the last two doublings the GPU's rate grew 4× where the CPU's grew little, and over
    # the last one the CPU's did not move beyond noise while the GPU's nearly doubled
    assert cpu_batches[-3:] == batches[-3:] == [256, 512, 1024], cpu_batches
    assert rates[-1] / rates[-3] > 3.5 and cpu[-1] / cpu[-3] < 1.5, (rates[-3:], cpu[-3:])
    assert rates[-1] / rates[-2] > 1.75 and not apart(cpu[-1], None, cpu[-2], None), (rates[-2:], cpu[-2:])


def _rises_on_every_device(records):
    result = records.result("03_throughput")
    gpu = result["samples_per_s"]["cuda:0"]
    assert all(b > a for a, b in zip(gpu, gpu[1:])), gpu
    # the CPU's rises too, where its record is not within noise: each point beyond noise above the one before, up to
    # its best, many times its first at a batch many times larger; past the best, no fall beyond noise
    batches, cpu = _cpu_throughput(records)
    best = cpu.index(max(cpu))
    assert all(b > a and apart(a, None, b, None) for a, b in zip(cpu[: best + 1], cpu[1 : best + 1])), cpu
    assert all(not apart(rate, None, cpu[best], None) for rate in cpu[best + 1 :]), cpu
    assert cpu[best] > 5 * cpu[0] and batches[best] >= 32 * batches[0], (batches, cpu)


def _almost_free_per_sample(records):
    result = records.result("03_throughput")
    step_ms = [b / r * 1e3 for b, r in zip(result["batches"], result["samples_per_s"]["cuda:0"])]
    assert max(step_ms) / min(step_ms) < 1.15, step_ms  # 128× the batch, the same step time


def _placement(records):
    return records.result("03_placement")


def _at_batch(records, name, batch):
    result = _placement(records)
    return result["ms_per_step"][name][result["batches"].index(batch)]


def _three_curves(records):
    _h100_sxm(records, "03_placement")
    assert _placement(records)["device"].startswith("cuda")
    assert set(_placement(records)["ms_per_step"]) == {
        "kept on the device",
        "moved every step",
        "moved every step, pinned + non_blocking",
    }


def _moved_twice(records):
    moved, kept = _at_batch(records, "moved every step", 256), _at_batch(records, "kept on the device", 256)
    assert (round(moved, 2), round(kept, 2), round(moved / kept)) == (1.11, 0.55, 2)
    nbytes = 256 * _placement(records)["sample_bytes"]
    assert round(nbytes / MiB) == 3
    bandwidth = records.result("02_bandwidth")
    gbps = bandwidth["gbps"]["host→device pageable"][bandwidth["sizes"].index(4 * MiB)]
    assert round(gbps) == 8 and round(nbytes / (gbps * 1e9) * 1e3, 1) == 0.4


def _small_batches(records):
    return {batch for batch in _placement(records)["batches"] if batch < 128}


def _curves_cross_within_noise(records):
    """Below batch 128 the record marks the kept steps within noise (each took over 1.25× the step at batch 256),
    and the curves cross only there: at batch 64 the kept step (1.27 ms) took longer than the moved one."""
    result = _placement(records)
    kept_name = "kept on the device"
    assert reference.noisy(records.record("03_placement"), "ms_per_step", kept_name) == _small_batches(records)
    moved, kept = result["ms_per_step"]["moved every step"], result["ms_per_step"][kept_name]
    crossed = [batch for batch, m, k in zip(result["batches"], moved, kept) if m < k]
    assert crossed and set(crossed) <= _small_batches(records), crossed


def _pinned_small_within_noise(records):
    """Below batch 128 the record marks the pinned steps within noise too: at batch 32 the pinned step took 3.91 ms,
    over five times its 0.71 ms at batch 256."""
    name = "moved every step, pinned + non_blocking"
    assert reference.noisy(records.record("03_placement"), "ms_per_step", name) == _small_batches(records)
    assert _at_batch(records, name, 32) > 5 * _at_batch(records, name, 256)


def _pinned_071(records):
    assert round(_at_batch(records, "moved every step, pinned + non_blocking", 256), 2) == 0.71


def _moving_costs_more_than_the_bytes(records):
    _h100_sxm(records, "03_placement")
    bandwidth = records.result("02_bandwidth")
    for batch in (128, 256):
        nbytes = batch * _placement(records)["sample_bytes"]
        size = min(n for n in bandwidth["sizes"] if n >= nbytes)  # the pageable copy of about that size
        copy_ms = nbytes / (bandwidth["gbps"]["host→device pageable"][bandwidth["sizes"].index(size)] * 1e9) * 1e3
        extra_ms = _at_batch(records, "moved every step", batch) - _at_batch(records, "kept on the device", batch)
        assert extra_ms > copy_ms, (batch, extra_ms, copy_ms)


def _pinned_narrows(records):
    kept, pinned, moved = (
        _at_batch(records, name, 256)
        for name in ("kept on the device", "moved every step, pinned + non_blocking", "moved every step")
    )
    assert kept < pinned < moved, (kept, pinned, moved)


def _kept_fastest(records):
    result = _placement(records)
    for batch in (128, 256):  # where the steps are longest; at 64 the curves crossed (a Claim too)
        times = {name: values[result["batches"].index(batch)] for name, values in result["ms_per_step"].items()}
        assert min(times, key=times.get) == "kept on the device", (batch, times)


def _pinned_at_link_rate(records):
    from gpulab.devices import HostLink

    gbps = records.result("02_bandwidth")["gbps"]
    pinned = max(gbps["host→device pinned"])
    assert pinned > 0.85 * HostLink(generation=5, width=16).gbps and pinned > 3 * max(gbps["host→device pageable"])


def _pinning_cost_vs_saving(records):
    bandwidth = records.result("02_bandwidth")
    assert round(bandwidth["pin_seconds"][bandwidth["sizes"].index(4 * MiB)] * 1e3, 3) == 0.025
    saved = _at_batch(records, "moved every step", 256) - _at_batch(
        records, "moved every step, pinned + non_blocking", 256
    )
    assert round(saved, 1) == 0.4


CLAIMS = [
    Claim(
        "on an H100 SXM, pinning and the pinned copy together beat a pageable copy 2.0× to 4.4× from 1 to 16 MiB",
        _pinning_paid,
    ),
    Claim(
        "the H100 SXM copied 16 and 64 KiB in 12 to 22 µs, pinned or not — while at 1 and 4 MiB pinning and the "
        "pinned copy together were 2.0× and 4.4× faster",
        _small_copies,
    ),
    Claim(
        "Without workers the loop makes that copy itself — which, at a few MiB a batch, the faster copy repaid on the "
        "H100 SXM (lesson 02).",
        _a_few_mib_repaid,
    ),
    Claim("A GPU keeps climbing for much longer", _gpu_keeps_climbing),
    Claim("On an H100 SXM at width 512 that held all the way to batch 1024, at about 1.2 ms a step.", _throughput),
    Claim("draws beside it, dashed, an H100 SXM's steps measured all three ways", _three_curves),
    Claim(
        "On an H100 SXM at batch 256 the step took twice as long, 1.11 ms against 0.55 ms with the batch kept on the "
        "device, though its 3 MiB cross in about 0.4 ms at the 8 GB/s a pageable copy of about that size reached "
        "there.",
        _moved_twice,
    ),
    Claim(
        "Steps this short vary from run to run: below batch 128 the H100 SXM's steps with the batch kept on the "
        "device are within noise, and the curves cross there.",
        _curves_cross_within_noise,
        about_noise=True,
    ),
    Claim("(0.71 ms on that H100 SXM at batch 256)", _pinned_071),
    Claim(
        "At small batches it need not help, and the record cannot show whether it did: below batch 128 its pinned "
        "steps are within noise too.",
        _pinned_small_within_noise,
        about_noise=True,
    ),
    Claim(
        "on that machine pin_memory() of 4 MiB took 0.025 ms (lesson 02's record), against the 0.4 ms a step the "
        "pinned way saved",
        _pinning_cost_vs_saving,
    ),
    Claim("beside an H100 SXM's three curves, dashed", _three_curves),
    Claim("Throughput rises with the batch size on every device", _rises_on_every_device),
    Claim("Until the device is saturated, a bigger batch is almost free per sample.", _almost_free_per_sample),
    Claim(
        "On a GPU the step that moves its batch is slower, and by more than the bytes over the link",
        _moving_costs_more_than_the_bytes,
    ),
    Claim("Pinned memory with non_blocking=True can narrow the gap", _pinned_narrows),
    Claim("Keeping data on the device is the fastest", _kept_fastest),
    Claim("so that the copy to the GPU runs at the link's full rate", _pinned_at_link_rate),
]

UNSHOWN = [
    Unshown(
        "on one with fewer GPUs than the index saved, with an error that names the device count; and on a machine "
        "with that GPU it loads — onto that GPU",
        "torch/serialization.py (_validate_device), not a measurement: no record loads a checkpoint",
    ),
    Unshown(
        "a checkpoint saved on a GPU fails to load on a machine without one",
        "torch's own error message (quoted), not a record: the H100 run loaded no checkpoint elsewhere",
    ),
    Unshown(
        "a small batch leaves most of its thousands of cores idle",
        "the 03_throughput record shows throughput, not how many cores a step keeps busy",
    ),
    Unshown(
        "A dataset of a few hundred MB can live on a large GPU for the whole run",
        "a statement about memory sizes from data sheets; no record holds a dataset on the GPU",
    ),
    # added
    Unshown(
        "has not been true of CPU↔GPU moves for years",
        "torch/nn/modules/module.py, Module._apply; the H100 ran this cell (nbval-lessons.log) but kept no output",
    ),
    Unshown(
        "Optimizer.load_state_dict casts each state tensor to its parameter's device and dtype",
        "torch/optim/optimizer.py (_process_value_according_to_param_policy); no record holds optimizer state",
    ),
    Unshown("and on Apple's MPS it turns pin_memory off", "torch/utils/data/dataloader.py; no MPS record"),
    Unshown(
        "What pinning does not do on its own is overlap the copy with the GPU's computation.",
        "CUDA's stream ordering; no record runs a second stream",
    ),
    Unshown(
        "the caching allocator records which stream made each block, and frees it for reuse as soon as Python "
        "lets go of the tensor",
        "PyTorch's documentation (Tensor.record_stream); no record runs a second stream",
    ),
    Unshown(
        "Make the layers wider and the GPU's advantage grows: more arithmetic per launch.",
        "the 03_throughput record ran one width, 512",
    ),
    Unshown(
        "a GPU runs the same step faster while the copy stays as long as the link makes it",
        "03_placement ran on the GPU only: no record times this step on a CPU",
    ),
    Unshown(
        "and on MPS the loader turns it off",
        "torch/utils/data/dataloader.py; no MPS record",
        where="solutions/03_models_on_gpu.ipynb",
    ),
]
