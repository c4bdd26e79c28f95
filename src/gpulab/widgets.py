"""The experiment panel every lesson uses: controls, a Run button, progress, status and a plot.

A panel wraps one experiment function written in the lesson::

    def sweep(max_n, dtype, progress):
        ...                      # call progress(done, total) as work finishes
        return result

    Panel(sweep, {"max_n": log2_slider("largest n", 64, 4096, 1024)}, plot=draw)

A panel drawn by a panel's figure (``plot=gpulab.figures.bandwidth``) takes that figure's name
(``"02_bandwidth"``), under which ``gpulab bench`` records it and its reference is found.

Displaying the panel runs the experiment once with the defaults, so executing the notebook
exercises the whole path. Every error, out-of-memory included, is caught and shown in the
panel; the kernel and the panel stay usable. Only core ipywidgets are used, and the same
code runs on ipywidgets 7.7 (Colab) and 8.x. Each figure carries a text alternative generated from the
run (:func:`gpulab.alt_text.describe`: each plot's axes and series, and the result line), which a screen
reader reads in the notebook and the website shows as the image's alt text.

For a page without a kernel (the course's website, ``make site``), ``GPULAB_STATIC=1`` makes a
panel show, in place of its controls, what its run at the default settings gave: the settings,
the figure with the same text alternative, and the status line, as plain HTML.
"""

from __future__ import annotations

import gc
import html
import os
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as w

from . import plots, simulated, timing, units

__all__ = [
    "Panel",
    "bytes_slider",
    "checkbox",
    "choice_slider",
    "default_limit_s",
    "dropdown",
    "int_slider",
    "log2_slider",
    "powers_of_two",
]

_STYLE = {"description_width": "initial"}


def powers_of_two(low: int, high: int, every: int = 1) -> list[int]:
    """The powers of two from ``low`` to ``high`` inclusive (``low`` rounded up to one).

    ``every=2`` keeps every second one (×4 apart), ``every=3`` every third, counting down from
    the largest, so the largest power of two up to ``high`` — the size a reader chose — is
    always among them.
    """
    if low < 1 or high < low:
        raise ValueError(f"need 1 <= low <= high, got {low} and {high}")
    if every < 1:
        raise ValueError(f"every must be at least 1, got {every}")
    values, value = [], 1 << (low - 1).bit_length()
    while value <= high:
        values.append(value)
        value *= 2
    return values[::-1][::every][::-1]


def log2_slider(description: str, low: int, high: int, value: int, cap: int | None = None) -> w.SelectionSlider:
    """A slider over the powers of two from ``low`` to ``high``, never past ``cap``.

    ``cap`` is what the device can hold (see :mod:`gpulab.memory`); the default ``value`` is
    lowered to the cap when it lies beyond it.
    """
    if cap is not None:
        high = max(low, min(high, cap))
    options = powers_of_two(low, high)
    value = max(v for v in options if v <= max(value, options[0]))
    return w.SelectionSlider(
        description=description,
        options=options,
        value=value,
        style=_STYLE,
        layout=w.Layout(width="420px"),
        continuous_update=False,
    )


def bytes_slider(description: str, low: int, high: int, value: int, cap: int | None = None) -> w.SelectionSlider:
    """A slider over sizes in bytes (powers of two from ``low`` to ``high``) labelled 4 KiB … 1 GiB.

    Its value is the number of bytes; ``cap`` (bytes that fit, see :mod:`gpulab.memory`)
    limits the largest choice, and lowers the default when it lies beyond.
    """
    if cap is not None:
        high = max(low, min(high, cap))
    sizes = powers_of_two(low, high)
    value = max(v for v in sizes if v <= max(value, sizes[0]))
    return w.SelectionSlider(
        description=description,
        options=[(units.format_bytes(v), v) for v in sizes],
        value=value,
        style=_STYLE,
        layout=w.Layout(width="420px"),
        continuous_update=False,
    )


def int_slider(description: str, low: int, high: int, value: int, step: int = 1, cap: int | None = None) -> w.IntSlider:
    """An integer slider from ``low`` to ``high``, never past ``cap``."""
    if cap is not None:
        high = max(low, min(high, cap))
    return w.IntSlider(
        description=description,
        min=low,
        max=high,
        step=step,
        value=min(max(value, low), high),
        style=_STYLE,
        layout=w.Layout(width="420px"),
        continuous_update=False,
    )


def choice_slider(description: str, options, value) -> w.SelectionSlider:
    """A slider over a few chosen values (e.g. ``[0.5, 0.9, 0.95, 0.99]``), starting at ``value``.

    In a panel with an estimate, a slider's options must grow in cost, as a panel caps sliders
    by time; a slider whose value costs nothing (a parameter of a formula) is never capped.
    """
    options = list(options)
    if value not in options:
        raise ValueError(f"{value!r} is not one of the options {options}")
    return w.SelectionSlider(
        description=description,
        options=options,
        value=value,
        style=_STYLE,
        layout=w.Layout(width="420px"),
        continuous_update=False,
    )


def dropdown(description: str, options, value=None) -> w.Dropdown:
    """A dropdown; ``options`` is a list of values or of ``(label, value)`` pairs."""
    widget = w.Dropdown(description=description, options=options, style=_STYLE)
    if value is not None:
        widget.value = value
    return widget


def checkbox(description: str, value: bool = False) -> w.Checkbox:
    return w.Checkbox(description=description, value=value, style=_STYLE, indent=False)


def _option_value(option):
    """A selection option's value: options are values, or ``(label, value)`` pairs."""
    return option[1] if isinstance(option, tuple) and len(option) == 2 else option


def _is_out_of_memory(exc: BaseException) -> bool:
    import torch

    # torch.OutOfMemoryError is CUDA's and XPU's; MPS raises a RuntimeError whose message says
    # "MPS backend out of memory" (aten/src/ATen/mps/MPSAllocator.mm), as older backends do.
    oom = getattr(torch, "OutOfMemoryError", None)
    return (oom is not None and isinstance(exc, oom)) or "out of memory" in str(exc).lower()


def _without_tracebacks(error: BaseException) -> BaseException:
    """error, its traceback dropped, and those of the errors it was raised from or during.

    A traceback holds the frames an error passed through and their local variables: a failed
    experiment's tensors. The panel keeps the error, not them.
    """
    seen: set[int] = set()
    pending = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        current.__traceback__ = None
        pending.extend(chained for chained in (current.__cause__, current.__context__) if chained is not None)
    return error


def _release_memory() -> None:
    gc.collect()
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    if hasattr(torch, "mps") and hasattr(torch.mps, "empty_cache") and torch.backends.mps.is_available():
        torch.mps.empty_cache()


LIMIT_S = 15.0  # what a room waits for after a slider moves


def static_outputs() -> bool:
    """Whether ``GPULAB_STATIC`` asks for outputs a page without a kernel can show (``make site`` sets it)."""
    return os.environ.get("GPULAB_STATIC", "") not in ("", "0")


def default_limit_s() -> float:
    """Seconds a panel's run may take: 15, or ``GPULAB_PANEL_LIMIT_S`` where it is set.

    The test runs on simulated GPUs set it lower: there a run measures this CPU, and a smaller
    setting runs the same code sooner.
    """
    value = os.environ.get("GPULAB_PANEL_LIMIT_S", "")
    try:
        limit = float(value) if value else LIMIT_S
    except ValueError:
        raise ValueError(f"GPULAB_PANEL_LIMIT_S={value!r}: give seconds, such as 5") from None
    if not limit > 0:
        raise ValueError(f"GPULAB_PANEL_LIMIT_S={value!r}: give seconds above 0")
    return limit


class Panel:
    """An experiment with controls, a Run button, a progress bar, a status line and a plot.

    - ``experiment(progress=..., **values)`` runs the measurement. ``values`` are the
      controls' values by name; ``progress(done, total)`` moves the bar. It returns a result.
    - ``plot(result, figure)`` draws the result on a matplotlib ``Figure``.
    - ``summary(result)`` returns one line for the status (optional).
    - ``name`` names the experiment, e.g. ``"02_bandwidth"``: ``gpulab bench`` records the
      panel's default run under it, and :func:`gpulab.reference.load` finds it by it. It is the
      name ``plot`` was registered under (:func:`gpulab.figures.panel`) where ``plot`` is a
      panel's figure, and is then not given again; a name that differs from it is a ValueError.
    - ``estimate_s(**values)`` says about how many seconds a run with those values takes on
      this machine (see :func:`gpulab.timing.expected_seconds`). Each slider then offers
      only the settings that finish within ``limit_s``, given the other controls' values, and
      a line under the controls says what is hidden. Slider options must grow in cost.
      ``limit_s`` defaults to :func:`default_limit_s`.

    After a run, ``result`` holds the last result (or None) and ``error`` the last
    exception (or None); ``elapsed_s`` is how long the run took and ``experiment_s`` how long
    the experiment alone took, without drawing. ``run()`` runs from code, as the button does.
    """

    def __init__(
        self,
        experiment: Callable[..., Any],
        controls: Mapping[str, w.ValueWidget],
        *,
        plot: Callable[[Any, Any], None] | None = None,
        summary: Callable[[Any], str] | None = None,
        title: str = "",
        name: str | None = None,
        figsize: tuple[float, float] = (9.0, 3.6),
        estimate_s: Callable[..., float] | None = None,
        limit_s: float | None = None,
    ):
        self.experiment = experiment
        self.controls = dict(controls)
        self.plot = plot
        self.summary = summary
        registered = getattr(plot, "panel_name", None)
        if name is not None and registered is not None and name != registered:
            raise ValueError(
                f"{getattr(plot, '__name__', 'the plot')} draws the panel {registered!r}, "
                f"not {name!r}: leave name out, and the panel takes its figure's"
            )
        self.name = name if name is not None else registered
        self.figsize = figsize
        self.result: Any = None
        self.summary_line = ""  # the last run's summary, with how many of its points were within noise
        self.error: BaseException | None = None
        self.runs = 0
        self.elapsed_s: float | None = None  # the whole run: the experiment, its plot and its summary
        self.experiment_s: float | None = None  # the experiment alone: what estimate_s predicts
        self.alt_text = ""  # what the last figure shows, in words: its text alternative
        self._figure_png: bytes | None = None
        self._running = False
        self._shown = False

        self.button = w.Button(description="Run", icon="play", button_style="primary")
        self.button.on_click(lambda _button: self.run())
        self.progress = w.IntProgress(value=0, min=0, max=1, layout=w.Layout(width="260px"))
        self.status = w.HTML(value="")
        self.output = w.Output(layout=w.Layout(min_height="80px"))
        self.title = title
        header = [w.HTML(value=f"<b>{html.escape(title)}</b>")] if title else []
        self.hint = w.HTML(value="")
        self.widget = w.VBox(
            header
            + list(self.controls.values())
            + [self.hint, w.HBox([self.button, self.progress]), self.status, self.output]
        )

        # Time caps: a slider offers only the settings that ``estimate_s`` says finish within
        # ``limit_s`` on this machine, given the other controls' current values.
        self.estimate_s = estimate_s
        self.limit_s = limit_s if limit_s is not None else default_limit_s()
        self.hidden: dict[str, list] = {}
        self._all_options = {
            name: list(control.options)
            for name, control in self.controls.items()
            if isinstance(control, w.SelectionSlider)
        }
        self._capping = False
        if estimate_s is not None:
            for control in self.controls.values():
                control.observe(lambda _change: self._apply_time_caps(), names="value")
            self._apply_time_caps()

    @property
    def values(self) -> dict[str, Any]:
        return {name: control.value for name, control in self.controls.items()}

    def _apply_time_caps(self) -> None:
        if self._capping:  # our own changes to options and values come back here
            return
        self._capping = True
        try:
            notes = []
            for name, options in self._all_options.items():
                control, values = self.controls[name], self.values
                allowed = options[:1]
                for option in options[1:]:  # settings are ordered by cost: stop at the first too slow
                    if self.estimate_s(**{**values, name: _option_value(option)}) > self.limit_s:
                        break
                    allowed.append(option)
                self.hidden[name] = [_option_value(o) for o in options[len(allowed) :]]
                if list(control.options) != allowed:
                    wanted = control.value
                    allowed_values = [_option_value(o) for o in allowed]
                    control.options = allowed
                    control.value = wanted if wanted in allowed_values else allowed_values[-1]
                if self.hidden[name]:
                    largest = allowed[-1][0] if isinstance(allowed[-1], tuple) else allowed[-1]
                    notes.append(f"{control.description} above {largest}")
            self.hint.value = (
                f"<span style='color:#555555;font-size:90%'>{html.escape(' and '.join(notes))} hidden: "
                f"it would take over {self.limit_s:g} s on this machine</span>"
                if notes
                else ""
            )
        finally:
            self._capping = False

    def _set_status(self, text: str, color: str = "inherit") -> None:
        self.status.value = f"<span style='color:{color}'>{html.escape(text)}</span>"

    def _report_progress(self, done: int, total: int) -> None:
        self.progress.max = max(int(total), 1)
        self.progress.value = min(max(int(done), 0), self.progress.max)

    def _show_text(self, text: str) -> None:
        self.output.outputs = ({"output_type": "stream", "name": "stderr", "text": text},)

    def _show_figure(self, figure, line: str) -> None:
        """Show ``figure`` with its text alternative: what it shows (each plot's axes and series) and the result
        line, in words (:func:`gpulab.alt_text.describe`), as a screen reader reads it here and on the website."""
        from . import alt_text

        self.alt_text = alt_text.describe(figure, line)
        png = self._figure_png = plots.to_png(figure)
        self.output.outputs = (
            {"output_type": "display_data", "data": plots.bundle(png, self.alt_text), "metadata": {}},
        )

    def run(self) -> Any:
        """Run the experiment with the controls' current values; return its result (None on error)."""
        if self._running:  # a click that arrives while running is ignored, not queued
            return None
        self._running = True
        self.button.disabled = True
        self.progress.bar_style = ""
        self._report_progress(0, 1)
        self._set_status("running …")
        self.runs += 1
        start = time.perf_counter()
        failure = text = None
        self._figure_png, self.alt_text, self.summary_line = None, "", ""
        try:
            result = timing.with_spread(self.experiment(progress=self._report_progress, **self.values))
            self.experiment_s = time.perf_counter() - start
            line = self.summary(result) if self.summary is not None else ""
            extra = [timing.noise_line(result), plots.SIMULATED_LINE if simulated.is_simulating() else ""]
            line = self.summary_line = " · ".join(part for part in (line, *extra) if part)
            if self.plot is not None:
                figure = plots.new_figure(self.figsize)
                self.plot(result, figure)
                self._show_figure(figure, line)
        except KeyboardInterrupt:
            self.result, self.error = None, None
            self.progress.bar_style = "warning"
            self._set_status("stopped (interrupted)", "#b26b00")
            return None
        except Exception as exc:  # shown in the panel; the kernel must survive a bad run
            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            failure = _without_tracebacks(exc)
            del exc
        finally:
            self.button.disabled = False
            self._running = False
        if failure is not None:
            # Released here, after the except block: inside it the interpreter still holds the
            # error's traceback (sys.exc_info() on Python 3.10), whose frames hold the failed
            # experiment's tensors, and empty_cache() could not return their memory.
            self.result, self.error = None, failure
            out_of_memory = _is_out_of_memory(failure)
            if out_of_memory:
                _release_memory()
            self.progress.bar_style = "danger"
            hint = " — out of memory: choose a smaller size and run again" if out_of_memory else ""
            self._set_status(
                f"✗ {type(failure).__name__}: {str(failure).splitlines()[0] if str(failure) else ''}{hint}", "#c0392b"
            )
            self._show_text(text)
            return None
        self.result, self.error = result, None
        self.progress.bar_style = "success"
        self._report_progress(1, 1)
        elapsed = self.elapsed_s = time.perf_counter() - start
        self._set_status(f"✓ done in {elapsed:.1f} s" + (f" · {line}" if line else ""), "#1e7b34")
        return result

    def show(self) -> None:
        """Display the panel; the first time, also run it once with the defaults.

        With ``GPULAB_STATIC=1``, display instead what the run at the defaults gave, as HTML (:meth:`static_html`).
        """
        from IPython.display import HTML, display

        if static_outputs():
            if not self._shown:
                self._shown = True
                self.run()
            display(HTML(self.static_html()))
            return
        display(self.widget)
        if not self._shown:
            self._shown = True
            self.run()

    def _setting(self, name: str, control) -> str:
        value = control.value
        for option in getattr(control, "options", ()):  # a selection's label, as its slider shows it
            if isinstance(option, tuple) and option[1] == value:
                value = option[0]
                break
        return f"{control.description or name} <b>{html.escape(str(value))}</b>"

    def static_html(self) -> str:
        """The panel's last run as HTML a page without a kernel can show: title, settings, figure, status."""
        parts = [f"<div class='gpulab-panel' data-panel='{html.escape(self.name or '')}'>"]
        if self.title:
            parts.append(f"<p><b>{html.escape(self.title)}</b></p>")
        if self.controls:
            settings = " · ".join(self._setting(name, control) for name, control in self.controls.items())
            parts.append(
                f"<p class='gpulab-settings'>Run at its default settings: {settings}. "
                "In the notebook, these are controls: change them and press Run.</p>"
            )
        if self._figure_png is not None:
            parts.append(plots.html_image(self._figure_png, self.alt_text))
        if self.error is not None:
            parts.append(f"<pre class='gpulab-error'>{html.escape(self.output.outputs[0]['text'])}</pre>")
        parts.append(f"<p class='gpulab-status'>{self.status.value}</p></div>")
        return "".join(parts)

    def _ipython_display_(self) -> None:
        self.show()
