"""deep_thin.overhead_reading: lecture 09's lines on its eager variants follow the counts, the trace and the
timings, each branch of the Keras gap (the second timing stubbed: no checked output depends on timing)."""

from course_lib import bench
from course_lib.models import deep_thin

SPREAD = (0.99, 1.0, 1.01, 0.995, 1.005, 0.998, 1.002, 0.997, 1.003, 1.0)
KERAS = ("Sequential, eager", "Functional, eager", "subclassed, eager")
DEPTH = 10


def comparison(medians: dict):
    return bench.Comparison(timings=[bench.Timing(n, m, [m * f for f in SPREAD], 1) for n, m in medians.items()],
                            baseline=next(iter(medians)))


def reading(keras_s=(1.0, 1.0, 1.0), calls=(1000, 1000, 1000), again=None, ops=None):
    result = comparison({**dict(zip(KERAS, keras_s)), deep_thin.GENERATED: 0.5})
    counts = {**{n: {"Python function calls": c, "runtime entries": 30} for n, c in zip(KERAS, calls)},
              deep_thin.GENERATED: {"Python function calls": 200, "runtime entries": 30}}
    share = {**{n: {"python": 0.6, "eager": 0.4} for n in KERAS}, deep_thin.GENERATED: {"python": 0.2, "eager": 0.8}}
    ops = ops or {n: {"MatMul": 1, "AddV2": 1} for n in (*KERAS, deep_thin.GENERATED)}
    asked = []

    def retime(fast, slow):
        asked.append((fast, slow))
        return again(fast, slow)

    return deep_thin.overhead_reading(result, counts, share, ops, DEPTH, retime, keras_models=KERAS), asked


def test_equal_models_read_as_equal_work_and_are_not_timed_again():
    lines, asked = reading()
    assert lines[0] == ("Work: the three Keras models make Python calls within 0.0% of each other, and every eager "
                        "variant runs the same ops per layer.")
    assert lines[1] == ("Trace: Python took 60% to 60% of a traced Keras forward pass, against 20% for the generated "
                        "code.")
    assert lines[2].startswith("Time: timed in turns, the slowest and the fastest of the three show") and not asked
    assert lines[3] == ("Generated ops: 20% of the Python calls of the leanest Keras model, for the same 3 runtime "
                        "entries per layer.")
    assert lines[4:] == [f"Keras' share of an eager layer call in the {n.split(',')[0]} model: 50%" for n in KERAS]


def test_different_ops_are_named():
    ops = {n: {"MatMul": 1} for n in (*KERAS, deep_thin.GENERATED)}
    ops[KERAS[1]] = {"MatMul": 1, "BiasAdd": 1}
    lines, _ = reading(ops=ops)
    assert lines[0].endswith("; the ops per layer differ between variants (see the trace's lines).")


def test_a_gap_that_holds_is_set_beside_the_call_counts():
    lines, asked = reading(keras_s=(1.2, 1.0, 1.0), calls=(1100, 1000, 1000),
                           again=lambda fast, slow: comparison({slow: 1.2, fast: 1.0}))
    assert asked == [("Functional, eager", "Sequential, eager")]
    assert "a difference that holds" in lines[2]
    assert ("Sequential, eager makes 10.0% more Python calls, which at its Python share of 60% predicts about 6.0% "
            "more time, 30% of the 20.0% measured") in lines[2]
    fewer, _ = reading(keras_s=(1.2, 1.0, 1.0), calls=(900, 1000, 1000),
                       again=lambda fast, slow: comparison({slow: 1.2, fast: 1.0}))
    assert "The counts point the other way (Sequential, eager makes 10.0% fewer Python calls)" in fewer[2]


def test_a_gap_that_does_not_hold_again_is_not_called():
    lines, asked = reading(keras_s=(1.2, 1.0, 1.0), again=lambda fast, slow: comparison({slow: 1.0, fast: 1.0}))
    assert asked and lines[2].endswith("the gap did not hold, so this run does not show the model style costing time.")
