"""Checkers of lecture 16's exercises, graded by what a trace shows: the retraces a fix leaves, the
share of the step that waits for input, the op type that leads a fixed step."""

from __future__ import annotations

from course_lib import kernels, profile
from course_lib.checks import answers, exercise
from course_lib.lessons import profiler_cases as cases

STEPS = 3
MAX_INPUT_SHARE = 1 / 3  # the pipeline as found waits most of each step; a fixed one a small part


@exercise("16", 1, "stop the retracing the trace shows",
          "Profile `program` and read the counters: which function traces, and on which argument?",
          "A tf.function keeps one graph per signature of its arguments: for a tensor that is its dtype and "
          "shape, for a Python number its value. Which argument of the step changes on every call?")
def stop_retracing(fixed_program):
    trace = answers.run("profiling fixed_program", profile.capture, fixed_program, steps=STEPS)
    counts = profile.counters(trace)
    assert sum(counts.calls.values()) >= STEPS, \
        "the trace shows no tf.function call in each step: the step must still run as a traced function"
    assert counts.retraces == 0, f"the trace still shows {counts.retraces} retraces in {STEPS} steps"


@exercise("16", 2, "input waiting below a third of the step",
          "Profile the loop over `slow_pipeline` and read the step breakdown: what does the step thread wait "
          "for, and what does the pipeline's source do one thing at a time?",
          "Read slow_pipeline line by line and ask of each stage: does it handle one file or one record at a "
          "time, and does anything get made while the step trains? Lecture 04 names a tf.data tool for "
          "each of those; a stage that waits on files rather than computing can use more threads than cores.")
def fast_input(fast_pipeline, records):
    dataset = answers.run("fast_pipeline(records)", fast_pipeline, records)
    images, labels = answers.run("taking a batch", lambda: next(iter(dataset)))
    assert tuple(images.shape) == (32, records.size, records.size, 1) and tuple(labels.shape) == (32,), \
        f"batches should be 32 images of {records.size}x{records.size}x1 and 32 labels, got " \
        f"{tuple(images.shape)} and {tuple(labels.shape)}"
    step = cases.classifier_step(dataset, records.size)
    trace = answers.run("profiling the loop over fast_pipeline", profile.capture, step, steps=4, warmup=2)
    share = profile.step_breakdown(trace).share("input")
    assert share < MAX_INPUT_SHARE, \
        f"the trace shows the step waiting for input {share:.0%} of the time, not below {MAX_INPUT_SHARE:.0%}"


@exercise("16", 3, "which op type leads after the fix",
          "Profile your fixed program and look at the op table (profile.op_stats).",
          "The table names ops, whichever library's kernels ran them (its `kernels by` column says which), "
          "and the leader depends on your machine, so take it from your own trace, not from the lecture's.")
def leading_op(trace, leading_op_type):
    assert isinstance(trace, profile.Trace), f"trace should be a profile.Trace (profile.capture), got " \
                                             f"{type(trace).__name__}"
    counts = profile.counters(trace)
    assert counts.retraces == 0, "this trace retraces: profile the program after your fix of exercise 1"
    assert isinstance(leading_op_type, str), f"leading_op_type should be a string, got {type(leading_op_type).__name__}"
    # a kernel's own name (``_MklNativeConv2DBackpropFilter`` where oneDNN ran it) names the same op
    assert kernels.op_of(leading_op_type) == profile.op_stats(trace).leader, \
        f"{leading_op_type!r} is not the op type with the most self time in your trace"
