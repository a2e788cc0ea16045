"""Checkers for lecture 15, neuroevolution: the genome's layout, networks per second, and the work of
a batched cart-pole episode loop."""

from __future__ import annotations

import numpy as np

from course_lib import bench
from course_lib.checks import exercise, method
from course_lib.evo import neuro


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
          "In a genome a layer's kernel is one unbroken stretch of genes, (inputs, units) row after row, with "
          "its bias after it; every genome of the population has the same layout.")
def kernels(kernels_of):
    assert callable(kernels_of), \
        f"kernels_of should be a function (population, layout, k), got {type(kernels_of).__name__}"
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
          "One call evaluates every genome. Of the times bench.measure reports, which describes the program "
          "rather than its tracing and compilation?")
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


@exercise("15", 3, "predict the work of a batched episode loop",
          "Lecture 15, cart-pole: the whole episode is one tf.while_loop over every policy and episode at once; "
          "read its condition in course_lib.problems.control.rollout.",
          "Which episode decides when the loop stops: the first to fail, an average one, or the last? Then ask "
          "what one pass of the body computes for an episode that has already failed.")
def loop_work(iterations, simulated, useful_share, returns, steps):
    r = np.asarray(bench.force(returns))
    for value, name in ((iterations, "iterations"), (simulated, "simulated")):
        assert isinstance(value, (int, np.integer)) and not isinstance(value, bool), \
            f"{name} should be a whole number, got {type(value).__name__}"
    want = int(min(r.max(), steps))
    if iterations == steps and want < steps:
        raise AssertionError(f"iterations is {iterations}: does the loop always run `steps` times?")
    if abs(iterations - r.mean()) < 1 and want != iterations:
        raise AssertionError(f"iterations is {iterations}, about the average return: does the loop stop when an "
                             "average episode has failed?")
    assert iterations == want, f"iterations is {iterations}; what ends the loop?"
    if simulated == int(r.sum()):
        raise AssertionError("simulated counts only the steps of running episodes; what does one pass of the loop "
                             "compute for an episode that has already failed?")
    assert simulated == want * r.size, f"simulated is {simulated}; how many episodes does one pass step?"
    method.close(useful_share, float(r.sum()) / simulated, "useful_share", rel=1e-6)
