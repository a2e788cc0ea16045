import numpy as np
import pytest
import tensorflow as tf

from course_lib import graphs
from course_lib.benchmarks import eager_vs_graph


def test_small_ops_eager_and_graph_agree():
    x = tf.ones([3])
    expected = np.ones(3, np.float32)
    for _ in range(5):
        expected = expected * 0.999 + 0.001
    np.testing.assert_allclose(graphs.small_ops(x, 10).numpy(), expected, rtol=1e-6)
    variants = graphs.small_ops_variants(elements=3)
    eager, graph = variants["eager"](ops=10)(), variants["tf.function"](ops=10)()
    np.testing.assert_allclose(eager.numpy(), graph.numpy(), rtol=1e-6)


def test_matmul_variants_agree():
    variants = graphs.matmul_variants()
    a, b, c = (variants[name](n=8)() for name in ("eager", "tf.function", "concrete function"))
    assert a.shape == (8, 8)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5)
    np.testing.assert_allclose(a.numpy(), c.numpy(), rtol=1e-5)


def test_kernel_threads_tell_the_calling_thread_from_the_executors():
    variants = graphs.matmul_variants()
    assert graphs.kernel_threads(variants["eager"](n=64), "MatMul") == ["the calling thread"]
    graph = graphs.kernel_threads(variants["tf.function"](n=64), "MatMul")
    assert graph and "the calling thread" not in graph


def test_builders_reject_bad_sizes():
    with pytest.raises(ValueError, match="ops must be a whole number >= 1, got 0"):
        graphs.small_ops_variants()["eager"](ops=0)
    with pytest.raises(TypeError, match="n must be a whole number >= 1, got float 2.5"):
        graphs.matmul_variants()["eager"](n=2.5)
    with pytest.raises(ValueError, match="batch must be"):
        graphs.train_step_variants()["train_on_batch"](batch=-1)
    with pytest.raises(TypeError, match="elements must be"):
        graphs.small_ops_variants(elements=True)


def test_train_step_variants_each_train_their_own_model():
    variants = graphs.train_step_variants(image_size=12, classes=3)
    assert list(variants) == ["eager train_step", "tf.function train_step", "train_on_batch"]
    for name, build in variants.items():
        step = build(batch=4)
        losses = [float(np.asarray(step())) for _ in range(2)]
        assert all(np.isfinite(losses)), name
        assert losses[0] > 0, name


def test_make_train_step_updates_the_weights():
    """One step moves the weights the way the gradient says.

    Both labels are class 0, so the loss's gradient on the last layer's class-0 bias is the mean of
    p0 - 1 < 0 whatever the random initialisation (even with every ReLU dead): SGD must raise it.
    """
    import keras

    model = graphs.conv_model(image_size=10, classes=2)
    optimizer = keras.optimizers.SGD(0.1)
    step = tf.function(graphs.make_train_step(
        model, optimizer, keras.losses.SparseCategoricalCrossentropy(from_logits=True)))
    images = tf.constant(np.random.default_rng(0).random((2, 10, 10, 1), dtype=np.float32))
    bias = model.layers[-1].bias
    before = bias.numpy().copy()
    step(images, tf.constant([0, 0]))
    after = bias.numpy()
    assert after[0] > before[0]
    assert after[1] < before[1]


def test_eagerly_restores_the_setting_even_after_an_error():
    assert not tf.config.functions_run_eagerly()
    seen = []

    @tf.function
    def f(x):
        seen.append(hasattr(x, "numpy"))  # eager tensors have values, symbolic ones do not
        return x

    with pytest.raises(ZeroDivisionError):
        with graphs.eagerly():
            f(tf.constant(1.0))
            assert tf.config.functions_run_eagerly()
            1 / 0
    assert not tf.config.functions_run_eagerly()
    f(tf.constant(2.0))
    assert seen == [True, False]


def test_save_and_load_round_trip(tmp_path):
    class Affine(tf.Module):
        def __init__(self):
            self.w = tf.Variable(3.0)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def __call__(self, x):
            return self.w * x + 1.0

    logger = tf.get_logger()
    level = logger.level
    loaded, files = graphs.save_and_load(Affine(), tmp_path / "affine")
    assert logger.level == level
    assert "saved_model.pb" in files and any(f.startswith("variables/") for f in files)
    np.testing.assert_allclose(loaded(tf.constant([1.0, 2.0])).numpy(), [4.0, 7.0])


def test_trace_counter_as_decorator_counts_one_trace_per_signature():
    counter = graphs.TraceCounter()

    @tf.function
    @counter
    def f(x):
        return x * 2

    for arg in (1, 1, 2, tf.constant(1.0), tf.constant(5.0), tf.constant([1.0, 2.0]), tf.constant(3)):
        f(arg)
    assert counter.count == 5
    assert counter.log == ["(1)", "(2)", "(float32[])", "(float32[2])", "(int32[])"]
    assert repr(counter) == "TraceCounter(count=5)"


def test_trace_counter_as_context_counts_traces_in_the_block_only():
    f = tf.function(lambda x: x + 1)
    f(tf.constant(1.0))
    with graphs.TraceCounter(f) as traces:
        f(tf.constant(2.0))
        assert traces.count == 0
        f(tf.constant([1.0]))
        f(tf.constant([1.0, 2.0]))
    f(tf.constant(1))  # after the block: not counted
    assert traces.count == 2


def test_trace_counter_bad_use():
    with pytest.raises(TypeError, match="needs a tf.function to watch"):
        graphs.TraceCounter(lambda x: x)
    with pytest.raises(TypeError, match="use a fresh TraceCounter"):
        graphs.TraceCounter(tf.function(lambda x: x))(lambda x: x)
    with pytest.raises(TypeError, match="decorates a function"):
        graphs.TraceCounter()(3)


def test_traces_per_call_table():
    f = tf.function(lambda x: x * x)
    rows = graphs.traces_per_call(f, [(1.0,), (1.0,), (tf.constant(1.0),), (tf.constant(2.0),), 2.0])
    assert [r["traced"] for r in rows] == ["yes", "no", "yes", "no", "yes"]
    assert [r["traces so far"] for r in rows] == [1, 1, 2, 2, 3]
    assert rows[2]["arguments"] == "(float32[])"
    text = graphs.format_rows(rows)
    assert text.splitlines()[0].split() == ["call", "arguments", "traced", "traces", "so", "far"]
    assert len(text.splitlines()) == 7


def test_input_signature_and_reduce_retracing_limit_traces():
    fixed = tf.function(lambda x: tf.reduce_sum(x), input_signature=[tf.TensorSpec([None], tf.float32)])
    relaxed = tf.function(lambda x: tf.reduce_sum(x), reduce_retracing=True)
    for n in (1, 2, 3, 4):
        fixed(tf.ones([n]))
        relaxed(tf.ones([n]))
    assert fixed.experimental_get_tracing_count() == 1
    assert relaxed.experimental_get_tracing_count() == 2


@tf.function
def _poly(x):
    return x * 2.0 + 1.0


def test_signature_operations_and_op_properties():
    spec = tf.TensorSpec([None], tf.float32)
    assert graphs.signature(_poly, spec) == ("inputs:\n  x: float32[None]\noutputs:\n  float32[None]\n"
                                             "captured tensors: 0")
    ops = graphs.operations(_poly, spec)
    assert [(o["name"], o["type"]) for o in ops] == [
        ("x", "Placeholder"), ("mul/y", "Const"), ("mul", "Mul"), ("add/y", "Const"),
        ("add", "AddV2"), ("Identity", "Identity")]
    assert ops[2]["inputs"] == "x:0, mul/y:0"
    cf = graphs.concrete(_poly, spec)
    assert graphs.concrete(cf) is cf
    mul = cf.graph.get_operation_by_name("mul")
    props = graphs.op_properties(mul)
    assert props["type"] == "Mul" and props["attributes"] == {"T": "float32"}
    assert props["inputs"] == ["x:0 float32[None]", "mul/y:0 float32[]"]
    assert props["outputs"] == ["mul:0 float32[None]"]
    const = graphs.op_properties(cf.graph.get_operation_by_name("mul/y"))
    assert const["attributes"] == {"dtype": "float32", "value": 2.0}
    with pytest.raises(TypeError, match="expected a tf.Operation"):
        graphs.op_properties("mul")
    with pytest.raises(TypeError, match="wrap a Python function with tf.function first"):
        graphs.operations(lambda x: x)


def test_signature_counts_captures():
    v = tf.Variable([1.0, 2.0])
    f = tf.function(lambda x: v * x)
    assert graphs.signature(f, tf.TensorSpec([2], tf.float32)).endswith("captured tensors: 1")


def _collatz_steps(n):
    steps = tf.constant(0)
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def test_autograph_turns_tensor_control_flow_into_graph_ops():
    f = tf.function(_collatz_steps)
    assert int(f(tf.constant(27))) == 111
    spec = tf.TensorSpec([], tf.int32)
    outer = graphs.op_types(f, spec)
    assert outer.get("StatelessWhile") == 1 and "StatelessIf" not in outer
    assert graphs.op_types(f, spec, nested=True).get("StatelessIf") == 1
    code = graphs.autograph_code(f)
    assert "ag__.while_stmt" in code and "ag__.if_stmt" in code


def test_python_loops_unroll_at_trace_time():
    f = tf.function(lambda x: graphs.small_ops(x, 6))
    assert graphs.op_types(f, tf.TensorSpec([2], tf.float32))["Mul"] == 3


def test_captured_tf_warnings_hold_the_retracing_warning_without_addresses():
    @tf.function
    def bump(x):
        return x + 1

    with graphs.captured_tf_warnings() as messages:
        for i in range(6):
            bump(i)
    assert messages and all("0x" not in m for m in messages)
    assert messages[0].startswith("5 out of the last 5 calls to ")
    assert "bump triggered tf.function retracing" in messages[0]


def test_error_summary_takes_the_last_error_line():
    exc = ValueError("in user code:\n\n    File \"/tmp/x.py\", line 3\n\n    TypeError: bad thing\n")
    assert graphs.error_summary(exc) == "TypeError: bad thing"
    assert graphs.error_summary(KeyError("k")) == "KeyError: 'k'"


def test_input_signature_rejects_what_does_not_fit():
    fixed = tf.function(lambda x: tf.reduce_sum(x), input_signature=[tf.TensorSpec([None], tf.float32)])
    with pytest.raises(TypeError) as info:
        fixed(tf.ones([2, 2]))
    summary = graphs.error_summary(info.value)
    assert summary.startswith("TypeError: Binding inputs to tf.function failed")
    assert "Received args" not in summary and "numpy=" not in summary


def test_variable_created_on_every_call_fails_and_create_once_works():
    message = graphs.variable_in_function_error()
    assert message.startswith("ValueError: tf.function only supports singleton tf.Variables")
    scale = graphs.LazyScale(3.0)
    assert float(scale(tf.constant(2.0))) == 6.0
    np.testing.assert_allclose(scale(tf.constant([1.0, 2.0])).numpy(), [3.0, 6.0])
    assert len(scale.trainable_variables) == 1
    # the first call traces twice (once to create the variable, once to check none is new)
    assert scale.__call__.experimental_get_tracing_count() == 3


def test_retracing_variants_trace_once_or_every_call():
    variants = graphs.retracing_variants()
    tensor, number = variants["tensor argument"](ops=4), variants["Python number (retraces)"](ops=4)
    with graphs.captured_tf_warnings():
        for _ in range(3):
            tensor(), number()
    assert tensor.function.experimental_get_tracing_count() == 1
    assert number.function.experimental_get_tracing_count() == 3
    np.testing.assert_allclose(number().numpy(), graphs.small_ops(tf.fill([4], 3.0), 4).numpy())


def test_format_rows_empty():
    assert graphs.format_rows([]) == "(no rows)"


def test_bench_eager_vs_graph_writes_json(tmp_path, capsys):
    import json

    out = tmp_path / "bench.json"
    assert eager_vs_graph.bench_eager_vs_graph(["--ops", "4", "--batch", "2", "--n", "8", "--repeats", "1",
                                        "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert [c["title"] for c in data["comparisons"]] == [
        "many small ops {'ops': 4}", "training step {'batch': 2}", "one big matmul {'n': 8}"]
    assert [v["name"] for v in data["comparisons"][1]["variants"]] == [
        "eager train_step", "tf.function train_step", "train_on_batch"]
    assert "wrote" in capsys.readouterr().out
