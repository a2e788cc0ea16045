"""Keras ``fit`` and ``predict`` at speed, and what a training step holds in memory (lecture 19).

* ``fit`` at speed (``training``): a small regression MLP compiled with ``steps_per_execution`` and
  ``jit_compile``, one epoch per timed call over a ``tf.data`` dataset of in-memory tensors built once
  (``fit_variants``; ``input_variants`` times ``fit`` on the NumPy arrays themselves, which builds its
  pipeline again every epoch); the same at a width where the arithmetic dominates; ``run_eagerly=True``,
  the price of debugging.
* ``BatchCounter``: a callback that counts ``on_train_batch_begin``/``end``, which Keras calls once per
  *execution* (``steps_per_execution`` steps), not once per step.
* ``predict_variants``: ``model.predict``, ``model(x)``, ``model.predict_on_batch`` and a ``tf.function``
  of the call, at any batch size.
* Memory (``memory``): ``step_peaks`` runs one training step per case in a fresh process and reads that process's
  high-water mark of resident memory (``VmHWM`` in ``/proc/self/status``, reset just before the step
  through ``/proc/self/clear_refs``; ``getrusage``'s ``ru_maxrss`` where that file is missing), and, on a
  GPU, TensorFlow's allocator peak (``tf.config.experimental.get_memory_info``). A case may wrap each
  layer in ``tf.recompute_grad`` or set the ``mixed_bfloat16`` policy (in the child only).
* The sentences a notebook shows about these measurements are built here, from the results.

TensorFlow and Keras are imported by the functions that need them, so the ``course`` command and a child
that only allocates NumPy memory stay quick.
"""

from course_lib.fitting.memory import (
    CASE_ENV,
    largest_batch,
    memory_rows,
    memory_sentence,
    peak_of,
    policy_sentence,
    reader_sentence,
    recompute_sentence,
    recompute_variants,
    step_data,
    step_peaks,
    train_step,
)
from course_lib.fitting.training import (
    EAGER_SETTINGS,
    FEATURES,
    FIT_SETTINGS,
    INPUT_NAMES,
    PREDICT_NAMES,
    BatchCounter,
    auto_sentence,
    auto_steps_per_execution,
    code_of,
    compiled_model,
    count_callbacks,
    data,
    eager_sentence,
    fit_sentences,
    fit_variants,
    gpu_sentence,
    in_memory_dataset,
    input_sentence,
    input_variants,
    jit_auto,
    mlp,
    one_epoch,
    per_step_rows,
    predict_sentences,
    predict_variants,
    shrink_sentence,
)

__all__ = [
    "BatchCounter", "CASE_ENV", "EAGER_SETTINGS", "FEATURES", "FIT_SETTINGS", "INPUT_NAMES", "PREDICT_NAMES",
    "auto_sentence", "auto_steps_per_execution", "code_of", "compiled_model", "count_callbacks", "data",
    "eager_sentence", "fit_sentences", "fit_variants", "gpu_sentence", "in_memory_dataset", "input_sentence",
    "input_variants", "jit_auto", "largest_batch", "memory_rows", "memory_sentence", "mlp", "one_epoch", "peak_of",
    "per_step_rows", "policy_sentence", "predict_sentences", "predict_variants", "reader_sentence",
    "recompute_sentence", "recompute_variants", "shrink_sentence", "step_data", "step_peaks", "train_step",
]
