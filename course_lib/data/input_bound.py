"""Input-bound or compute-bound: one training epoch timed three ways, and split into its parts."""

from __future__ import annotations

import html
import time
from dataclasses import dataclass, field

import tensorflow as tf

from course_lib import bench, tables
from course_lib.data.latency import transform
from course_lib.data.pipelines import consume, xy
from course_lib.data.shards import Shards


def make_model(features: int, classes: int, *, hidden: int = 256, depth: int = 2, seed: int = 0):
    """A small MLP classifier, compiled; ``hidden`` and ``depth`` set how much compute a step costs."""
    import keras

    keras.utils.set_random_seed(seed)
    layers = [keras.Input((features,))]
    layers += [keras.layers.Dense(hidden, activation="relu") for _ in range(depth)]
    layers += [keras.layers.Dense(classes)]
    model = keras.Sequential(layers)
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


EPOCH_PARTS = ("before the first step", "in steps", "between steps", "after the last step")


def _epoch_clock():
    """A Keras callback that timestamps each training step, so one ``fit`` epoch can be split into
    ``EPOCH_PARTS`` that add up to the whole call (``start()`` marks the call's beginning)."""
    import keras

    class EpochClock(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.epochs: list[dict] = []

        def start(self):
            self._t0, self._steps = time.perf_counter(), []

        def on_train_batch_begin(self, batch, logs=None):
            self._steps.append([time.perf_counter(), None])

        def on_train_batch_end(self, batch, logs=None):
            self._steps[-1][1] = time.perf_counter()

        def stop(self):
            end, steps = time.perf_counter(), self._steps
            self.epochs.append({
                "before the first step": steps[0][0] - self._t0,
                "in steps": sum(b - a for a, b in steps),
                "between steps": sum(steps[i + 1][0] - steps[i][1] for i in range(len(steps) - 1)),
                "after the last step": end - steps[-1][1],
                "steps": len(steps)})

    return EpochClock()


@dataclass
class Diagnosis:
    """Where an epoch's time goes: input alone, compute alone, and both in one training run.

    ``epochs`` holds, for "compute only" and "training", the timed epoch closest to the median
    split into ``EPOCH_PARTS`` (they add up to the epoch), which is where time that neither the
    input nor the compute explains shows up.
    """

    comparison: bench.Comparison
    epochs: dict = field(default_factory=dict)

    @property
    def input_s(self) -> float:
        return self.comparison["input only"].median_s

    @property
    def compute_s(self) -> float:
        return self.comparison["compute only"].median_s

    @property
    def training_s(self) -> float:
        return self.comparison["training"].median_s

    @property
    def unexplained_s(self) -> float:
        """Training time beyond input plus compute, each timed in an epoch of its own: positive when training
        cost more than its halves apart, negative when it cost less. The three epochs are separate, so this
        holds their run-to-run differences as well as any overlap; the recorded runs of ``data.Recorder``
        measure overlap directly."""
        return self.training_s - self.input_s - self.compute_s

    @property
    def bound(self) -> str:
        """What the epoch spent most time on: "input" or "compute" where the two, timed in turns, differ by
        more than their noise; "even" where this run cannot tell which took longer; "neither" when the time
        beyond input plus compute is larger than both."""
        if self.unexplained_s > max(self.input_s, self.compute_s):
            return "neither"
        if not self.comparison.apart("input only", "compute only"):
            return "even"
        return "input" if self.input_s > self.compute_s else "compute"

    @property
    def bound_text(self) -> str:
        """``bound`` as a reader says it: "input-bound", "compute-bound", "bound by neither half" or "bound by
        input and compute alike"."""
        return {"neither": "bound by neither half", "even": "bound by input and compute alike"}.get(
            self.bound, f"{self.bound}-bound")

    def unexplained_rounds_s(self) -> list[float]:
        """``unexplained_s`` round by round: the three epochs take turns, so round r of each was timed under the
        same load, and a sign every round shows is one the machine's drift did not make."""
        train, alone, compute = (self.comparison[n].times_s for n in ("training", "input only", "compute only"))
        return [t - i - c for t, i, c in zip(train, alone, compute)]

    def _unexplained_text(self, ms) -> str:
        """Whether training took more or less than its halves apart, called only where every one of at least
        ``bench.MIN_ROUNDS`` rounds shows the same sign (a sign test: 5 rounds of pure noise agree 1 time in 16)."""
        rounds = self.unexplained_rounds_s()
        if len(rounds) < bench.MIN_ROUNDS:
            return (f"training took {ms(self.unexplained_s)} against input and compute timed apart, by the medians: "
                    f"too few rounds ({len(rounds)}) to tell whether it is more or less")
        if all(r > 0 for r in rounds):
            return (f"training took {ms(self.unexplained_s)} more than input and compute together, in every round: "
                    f"{ms(self.unexplained_s)} is explained by neither half alone")
        if all(r < 0 for r in rounds):
            if self.training_s > max(self.input_s, self.compute_s):
                return (f"training took {ms(-self.unexplained_s)} less than input and compute timed apart, in every "
                        "round")
            return "training took no longer than the longer half alone"
        return (f"training against input and compute timed apart: {ms(abs(self.unexplained_s))} "
                f"{'more' if self.unexplained_s >= 0 else 'less'} by the medians, but the rounds disagree on the "
                "sign, so this run cannot tell whether the halves add up")

    def verdicts(self) -> bench.Verdicts:
        """The diagnosis as sentences read from this measurement (Markdown in a notebook)."""
        ms = lambda s: f"{s * 1e3:.0f} ms"  # noqa: E731
        out = [f"one training epoch took {ms(self.training_s)}: the input alone {ms(self.input_s)}, "
               f"the compute alone {ms(self.compute_s)}"]
        out.append(self._unexplained_text(ms))
        out.append({"input": "the input is the larger part: a faster model would help little; fix the pipeline first",
                    "compute": "the compute is the larger part: the model is the bigger lever",
                    "even": f"the compute took {self.comparison.ratio_with_interval('input only', 'compute only')} "
                            f"the input's time, {self.comparison.uncalled('input only', 'compute only')}: this run "
                            "cannot tell which is the larger part, so a faster pipeline and a faster model would "
                            "each help",
                    "neither": "the time beyond input plus compute is larger than either: look at the "
                               "breakdown below before optimising either half"}[self.bound])
        train, alone = self.epochs.get("training"), self.epochs.get("compute only")
        if train and alone:
            extra = {p: train[p] - alone[p] for p in EPOCH_PARTS}
            where = max(extra, key=extra.get)
            parts = ", ".join(f"{p} {ms(train[p])} (in memory: {ms(alone[p])})" for p in EPOCH_PARTS)
            out.append(f"the training epoch, part by part: {parts}")
            if extra[where] > 0:
                out.append(f"against training on in-memory data, most of the extra time ({ms(extra[where])}) "
                           f"is {where}")
            else:
                out.append("no part of the training epoch took longer than on in-memory data")
        return bench.Verdicts(out)

    def table(self) -> str:
        """The epoch parts of "compute only" and "training" as an HTML table (ms)."""
        rows = [{"part of the epoch": p, **{f"{k} (ms)": e[p] * 1e3 for k, e in self.epochs.items()}}
                for p in EPOCH_PARTS]
        rows.append({"part of the epoch": "whole epoch",
                     **{f"{k} (ms)": sum(e[p] for p in EPOCH_PARTS) * 1e3 for k, e in self.epochs.items()}})
        return tables.table(rows)

    def __repr__(self) -> str:
        return (f"{self.bound_text}: input {self.input_s * 1e3:.0f} ms, compute {self.compute_s * 1e3:.0f} ms, "
                f"training {self.training_s * 1e3:.0f} ms per epoch ({self.unexplained_s * 1e3:+.0f} ms "
                f"against input + compute)")

    def _repr_html_(self) -> str:
        return f"<p><b>{html.escape(repr(self))}</b></p>" + self.comparison._repr_html_() + \
            (self.table() if self.epochs else "")


# what two diagnoses in a row say, the naive pipeline's bound then the fast one's
_MOVED = {("input", "compute"): "the faster pipeline moved the bottleneck from the input to the model: from here on "
                                "the lever is the model (lectures 06 to 09)",
          ("input", "input"): "even the fast pipeline left the model waiting: here a faster pipeline would still pay",
          ("compute", "compute"): "the model set the pace even with the naive pipeline: the pipeline's speed "
                                  "mattered little here"}


def bottleneck_text(naive: Diagnosis, fast: Diagnosis) -> str:
    """Where the bottleneck went from the naive pipeline's diagnosis to the fast one's, said only for bounds
    each run called (a bound this run could not call points to the breakdowns)."""
    moved = _MOVED.get((naive.bound, fast.bound), "the breakdowns above show where time went")
    if "even" in (naive.bound, fast.bound):
        moved = "so this run cannot tell whether the faster pipeline moved the bottleneck; " + moved
    return (f"The naive pipeline's diagnosis reads {naive.bound_text}, the fast one's {fast.bound_text}: {moved}. "
            "(The two diagnoses ran one after the other, not in turns, so no ratio of their epochs is read here.)")


def timed_alike(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """``dataset`` with ``tf.data`` autotuning off, how ``diagnose`` runs all three of its epochs.

    With autotuning on, a background thread retunes the stages' parallelism while epochs run, so the
    input alone and training would not run the same pipeline; without it, the stages keep the parallelism
    they start with. ``diagnose`` also ends every epoch, the input alone included, by destroying its
    iterator on the clock, so whatever ending a pipeline costs is in both the input alone and training."""
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)


def diagnose(model, dataset: tf.data.Dataset, shards: Shards, *, batch_size: int = 16,
             repeats: int = 3) -> Diagnosis:
    """Is training on ``dataset`` input-bound or compute-bound, and what else costs time?

    Times one epoch three ways in the same run, in turns: iterating the input pipeline alone,
    training on the same batches already in memory (compute alone), and training on
    the pipeline; each ``fit`` epoch is also split into ``EPOCH_PARTS``. ``dataset``
    yields the dict batches of ``pipeline``. All three run ``timed_alike``: with ``tf.data``
    autotuning off, so all three run the same pipeline.
    """
    ready = transform({"id": shards.ids, "x": shards.x, "y": shards.y})
    dataset = timed_alike(dataset)
    in_memory = timed_alike(tf.data.Dataset.from_tensor_slices((ready["x"], ready["y"])).batch(batch_size).cache())
    train = xy(dataset)
    clocks = {"compute only": _epoch_clock(), "training": _epoch_clock()}

    def fit(name, ds):
        def run():
            clock = clocks[name]
            clock.start()
            loss = model.fit(ds, epochs=1, verbose=0, shuffle=False, callbacks=[clock]).history["loss"][-1]
            clock.stop()
            return loss
        return run

    # Each epoch ends by destroying its iterator on the clock, the input alone as fit's epochs do.
    variants = {"input only": lambda: consume(dataset, release_here=True),
                "compute only": fit("compute only", in_memory), "training": fit("training", train)}
    # The first, separately reported epoch is the warm-up: it traces the training step.
    comparison = bench.compare(variants, baseline="training", repeats=repeats, warmup=0, in_turns=True,
                               title=f"one epoch, batch {batch_size}")
    epochs = {}
    for name, clock in clocks.items():
        timed = clock.epochs[1:] or clock.epochs  # the first call is reported apart
        median = comparison[name].median_s
        epochs[name] = min(timed, key=lambda e: abs(sum(e[p] for p in EPOCH_PARTS) - median))
    return Diagnosis(comparison, epochs)
