"""The live speedup widget: one front end for every lecture's measurements.

Its logic is plain Python. ``widget.run(...)`` measures the chosen variants with
``course_lib.bench.compare`` and updates the bar chart, the table and the progress
bar after each variant; it works the same under papermill and pytest (no browser)
and returns the ``bench.Comparison``. In JupyterLab the Run button makes that same
call with the values of the controls; a run that fails shows its error, and what to do,
inside the widget (a button's exception would otherwise reach only Lab's log console).
"""

from __future__ import annotations

import html
import io
from typing import Any, Callable, Mapping, Sequence

import ipywidgets as W
from IPython.display import HTML, Image, display

from course_lib import bench

Builder = Callable[..., Callable[[], Any]]

CSS_CLASS = "course-speedup-widget"  # marks the widget in the page and in a notebook's saved widget state
WHAT_TO_DO = ("What to do: the message names the variant and the cause. If the cells above have not run in "
              "this kernel, or something they prepared is gone (the kernel restarted, a file was deleted), "
              "run the notebook from the top (Run &gt; Run All Cells) and press Run again; if a size is too "
              "large for this machine, pick a smaller one.")


class SpeedupWidget:
    """Compare variants of one computation, live.

    ``variants`` maps a name to a builder: called with the size knobs as keyword
    arguments, it prepares its data (untimed) and returns the zero-argument callable
    to time. ``sizes`` maps each knob to its choices; ``defaults`` picks the start
    values (the first choice otherwise). The variants are timed in turns with an A/A pair of the
    baseline (``bench.compare``), and the table's verdict column is ``Comparison.verdict``'s call:
    the same rule as every sentence in the course. The display updates once all rounds are timed.
    """

    def __init__(self, variants: Mapping[str, Builder], sizes: Mapping[str, Sequence] | None = None, *,
                 defaults: Mapping[str, Any] | None = None, baseline: str | None = None,
                 title: str = "", repeats: int = 5):
        if not variants:
            raise ValueError("SpeedupWidget needs at least one variant: {'name': lambda **sizes: fn}")
        for name, builder in variants.items():
            if not callable(builder):
                raise TypeError(f"variant {name!r} must be a builder function (sizes -> callable), "
                                f"got {type(builder).__name__}")
        self.variants = dict(variants)
        self.sizes = {k: list(v) for k, v in (sizes or {}).items()}
        for knob, choices in self.sizes.items():
            if not choices:
                raise ValueError(f"size knob {knob!r} has no choices")
        self.defaults = {k: v[0] for k, v in self.sizes.items()}
        for knob, value in (defaults or {}).items():
            self._check_size(knob, value)
            self.defaults[knob] = value
        self.baseline = baseline or next(iter(self.variants))
        self._check_variant(self.baseline, "baseline")
        self.title = title
        self.repeats = repeats
        self.result: bench.Comparison | None = None
        self.timed: dict[str, Callable[[], Any]] = {}  # the last run's callables, to inspect what they did
        self._build_controls()

    # -- validation ---------------------------------------------------------------
    def _check_variant(self, name: str, what: str = "variant") -> None:
        if name not in self.variants:
            raise ValueError(f"unknown {what} {name!r}; variants are: {', '.join(self.variants)}")

    def _check_size(self, knob: str, value: Any) -> None:
        if knob not in self.sizes:
            known = ", ".join(self.sizes) or "none"
            raise ValueError(f"unknown size knob {knob!r}; knobs are: {known}")

    # -- the front end ------------------------------------------------------------
    def _build_controls(self) -> None:
        self.size_controls = {
            knob: W.SelectionSlider(options=choices, value=self.defaults[knob], description=knob,
                                    continuous_update=False)
            for knob, choices in self.sizes.items()
        }
        self.checkboxes = {name: W.Checkbox(value=True, description=name, indent=False)
                           for name in self.variants}
        self.button = W.Button(description="Run", button_style="primary", icon="play")
        self.progress = W.IntProgress(value=0, min=0, max=len(self.variants), description="idle")
        self.chart = W.Output()
        self.table = W.HTML()
        self.status = W.HTML()  # a failed run's error and what to do; empty otherwise
        self.button.on_click(lambda _: self.run_from_controls())
        header = [W.HTML(f"<b>{self.title}</b>")] if self.title else []
        self.box = W.VBox(header + [
            W.HBox(list(self.size_controls.values())),
            W.HBox(list(self.checkboxes.values())),
            W.HBox([self.button, self.progress]),
            self.status,
            W.HBox([self.chart, self.table]),
        ])
        self.box.add_class(CSS_CLASS)

    def _ipython_display_(self) -> None:
        display(self.box)

    def run_from_controls(self) -> bench.Comparison | None:
        """What the Run button does: ``run`` with the controls' values; a failure is shown, not raised."""
        chosen = [n for n, box in self.checkboxes.items() if box.value]
        try:
            return self.run(variants=chosen, **{k: c.value for k, c in self.size_controls.items()})
        except Exception:  # run() has put the error and what to do into the widget
            return None

    # -- the logic -------------------------------------------------------------------
    def run(self, variants: Sequence[str] | None = None, **sizes) -> bench.Comparison:
        """Measure ``variants`` (all by default) at ``sizes``; update the display as each finishes.

        Raises on failure, after showing the error and what to do in the widget.
        """
        self.status.value = ""
        try:
            return self._run(variants, sizes)
        except Exception as exc:
            self.progress.description = "failed"
            self.status.value = (f'<div style="color:#b00"><b>{html.escape(type(exc).__name__)}:</b> '
                                 f'{html.escape(str(exc))}<br>{WHAT_TO_DO}</div>')
            raise

    def _run(self, variants: Sequence[str] | None, sizes: Mapping[str, Any]) -> bench.Comparison:
        names = list(self.variants) if variants is None else list(variants)
        if not names:
            raise ValueError("no variant chosen: tick at least one box or pass variants=[...]")
        for name in names:
            self._check_variant(name)
        for knob, value in sizes.items():
            self._check_size(knob, value)
        params = {**self.defaults, **sizes}
        baseline = self.baseline if self.baseline in names else names[0]
        for knob, value in params.items():
            if value in self.sizes[knob]:
                self.size_controls[knob].value = value
        for name, box in self.checkboxes.items():
            box.value = name in names

        callables = {}
        for name in names:
            try:
                callables[name] = self.variants[name](**params)
            except Exception as exc:
                raise bench.BenchError(f"building variant {name!r} with {params} raised "
                                       f"{type(exc).__name__}: {exc}") from exc

        self.timed = callables
        self.progress.max, self.progress.value, self.progress.description = len(names), 0, "running"
        self.button.disabled = True
        partial: list[bench.Timing] = []

        def on_result(timing: bench.Timing, done: int, total: int) -> None:
            partial.append(timing)
            self.progress.value = done
            self._show(bench.Comparison(partial, baseline if baseline in [t.name for t in partial]
                                        else partial[0].name, title=self.title, params=params))

        try:
            result = bench.compare(callables, baseline=baseline, repeats=self.repeats,
                                   title=self.title, params=params, on_result=on_result)
        finally:
            self.button.disabled = False
            self.progress.description = "done"
        self.result = result
        self._show(result)
        return result

    def _show(self, comparison: bench.Comparison) -> None:
        """Redraw table and chart; works with or without a running kernel."""
        import matplotlib.pyplot as plt

        self.table.value = comparison._repr_html_()
        fig = comparison.plot().figure
        png = io.BytesIO()
        fig.savefig(png, format="png", dpi=80, bbox_inches="tight")  # long names and titles stay inside the image
        plt.close(fig)
        self.chart.outputs = ()
        self.chart.append_display_data(Image(data=png.getvalue(), format="png"))

    def report(self) -> HTML:
        """The last result as static HTML (what a reader sees in an executed notebook)."""
        if self.result is None:
            raise RuntimeError("nothing measured yet: call run() or press Run")
        return HTML(self.result._repr_html_())
