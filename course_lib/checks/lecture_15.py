"""Checkers for lecture 15, neuroevolution: the genome's layout, networks per second, and how the
per-network rate of each way of evaluating a population moves with its size."""

from __future__ import annotations

from typing import Mapping

import numpy as np

from course_lib import bench
from course_lib.checks import exercise, method
from course_lib.evo import neuro

CHOICES = ("lower", "about the same", "higher")


def _kernel_case():
    """A chain with no square kernel, so a transposed reshape cannot pass by accident."""
    model = neuro.mlp(5, [4, 3], 2, seed=0)
    population = neuro.initial_population(model, 3, seed=1)
    layers = neuro.Layout(model).layers
    expected = [np.stack([neuro.from_genome(model, g) and layer.kernel.numpy() for g in population])
                for layer in layers]
    return model, population, expected


@exercise("15", 1, "slice a layer's kernels from the population",
          "neuro.Layout(model).slots[k] says where layer k's weights start in a genome, and how many inputs and "
          "units it has.",
          "A kernel is stored row-major as (inputs, units), and each layer's bias follows its kernel: slice "
          "population[:, start:end] and reshape it with the population axis first.")
def kernels(kernels_of):
    assert callable(kernels_of), f"kernels_of should be a function (population, layout, k), got {type(kernels_of).__name__}"
    model, population, expected = _kernel_case()
    layout = neuro.Layout(model)
    for k, want in enumerate(expected):
        got = np.asarray(bench.force(kernels_of(population, layout, k)))
        assert got.shape == want.shape, \
            f"layer {k}'s kernels have shape {got.shape}; with the population axis first they are {want.shape}"
        if not np.array_equal(got, want):
            if np.array_equal(np.sort(got, axis=None), np.sort(want, axis=None)):
                raise AssertionError(f"layer {k}: the right weights in the wrong places; Keras keeps a kernel "
                                     "as (inputs, units), row after row")
            raise AssertionError(f"layer {k}'s kernels are not the weights Keras holds for it"
                                 + (" (layer 0 was right: where does the next layer start?)" if k else ""))


@exercise("15", 2, "measure networks per second",
          "bench.measure times a zero-argument function: the first call apart, then the median of repeats.",
          "Time the XLA-compiled batched forward on all the genomes at once; the rate is networks per call "
          "divided by the time of a steady-state call.")
def networks_per_second(forward, timing, rate, population):
    assert method.is_xla(forward), \
        "forward should be the batched layout.forward compiled with XLA: tf.function(..., jit_compile=True)"
    assert isinstance(timing, bench.Timing), \
        f"timing should be what bench.measure returns, got {type(timing).__name__}"
    assert len(timing.times_s) >= 3, f"timing has {len(timing.times_s)} timed repeats; ask for at least 3"
    assert isinstance(rate, (int, float, np.floating)) and not isinstance(rate, bool), \
        f"rate should be a number (networks per second), got {type(rate).__name__}"
    expected = population / timing.median_s
    if abs(rate - population / timing.first_call_s) <= 1e-6 * abs(rate) and rate != expected:
        raise AssertionError("that rate comes from the first call, which traced and compiled the function")
    if abs(rate - 1 / timing.median_s) <= 1e-6 * abs(rate):
        raise AssertionError("that is calls per second; each call evaluates the whole population")
    method.close(rate, expected, "rate", rel=1e-6)


@exercise("15", 3, "predict how the rates move with the population",
          "Lecture 15's widget section: what does each variant pay per network, and what once per call?",
          "Count the calls: one Keras call (with its weights loaded) per network, against one call for the "
          "whole population; which costs are shared when the population grows?")
def predict_rates(prediction):
    assert isinstance(prediction, Mapping), f"prediction should be a dict, got {type(prediction).__name__}"
    wanted = [neuro.PER_INDIVIDUAL, neuro.XLA]
    assert sorted(prediction) == sorted(wanted), f"prediction should have the keys {wanted}, got {list(prediction)}"
    for name, value in prediction.items():
        assert value in CHOICES, f"prediction[{name!r}] should be one of {CHOICES}, got {value!r}"
    keras_calls, xla = prediction[neuro.PER_INDIVIDUAL], prediction[neuro.XLA]
    assert keras_calls == "about the same", \
        (f"per-individual Keras calls: {keras_calls!r} is not what their mechanism gives: what does one more "
         "network add to the time of a population?")
    assert xla == "higher", \
        (f"XLA: {xla!r} is not what its mechanism gives: one call evaluates every network; which of its costs "
         "grow with the population, and which do not?")
