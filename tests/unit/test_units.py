"""gpulab.units: sizes and durations written for a reader, also where lessons and exercises first found them."""

import gpulab
from gpulab import plots, timing, units


def test_bytes_read_in_binary_units():
    assert units.format_bytes(512) == "512 B"
    assert units.format_bytes(4096) == "4 KiB"
    assert units.format_bytes(64 * 2**20) == "64 MiB"
    assert units.format_bytes(3 * 2**30) == "3 GiB"


def test_durations_read_in_the_unit_that_suits_them():
    assert units.format_seconds(1.5) == "1.5 s"
    assert units.format_seconds(0.00123) == "1.23 ms"
    assert units.format_seconds(4.2e-6) == "4.2 µs"
    assert units.format_seconds(3e-9) == "3 ns"
    assert units.format_seconds(0.0) == "0 ns"


def test_the_old_paths_are_the_same_functions():
    # Exercise notebooks already handed out call gpulab.plots.format_bytes.
    assert plots.format_bytes is units.format_bytes and "format_bytes" in plots.__all__
    assert timing.format_seconds is units.format_seconds and "format_seconds" in timing.__all__
    assert gpulab.units is units and "units" in dir(gpulab)


def test_numbers_keep_three_significant_digits_and_every_whole_digit():
    assert units.format_number(187.3) == "187" and units.format_number(187345.6) == "187,346"
    assert units.format_number(3.417) == "3.42" and units.format_number(0.012345) == "0.0123"
    assert units.format_number(-2.5) == "-2.50" and units.format_number(0) == "0"
