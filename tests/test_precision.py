"""course_lib.precision: the sentences follow the run and the processor, the policy keeps float32 variables,
the loss scale falls and rises, and quantized models agree with float32 within the stated bound."""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import bench, precision

AVX512_BF16 = {"amx_tile": False, "avx512_bf16": True, "avx512f": True, "avx2": True}
AMX = {"amx_tile": True, "avx512_bf16": True, "avx512f": True, "avx2": True}
AVX2_ONLY = {"amx_tile": False, "avx512_bf16": False, "avx512f": False, "avx2": True}


def fake(bf16_over_fp32: float, rounds: int = 9) -> bench.Comparison:
    """float32 and bfloat16 timed by hand: bfloat16 takes ``bf16_over_fp32`` times float32's time."""
    wobble = [1.0, 1.002, 0.998, 1.001, 0.999, 1.003, 0.997, 1.0, 1.001][:rounds]
    fp32 = [1e-3 * w for w in wobble]
    bf16 = [1e-3 * bf16_over_fp32 * w for w in reversed(wobble)]
    return bench.Comparison(timings=[bench.Timing("float32", 2e-3, fp32, 1), bench.Timing("bfloat16", 2e-3, bf16, 1)],
                            baseline="float32")


def test_cpu_features_read_from_the_machine_description():
    assert precision.cpu_features({"cpu_flags": ["avx2", "avx512_bf16"]}) == {
        "amx_tile": False, "avx512_bf16": True, "avx512f": False, "avx2": True}
    assert set(precision.cpu_features()) == {"amx_tile", "avx512_bf16", "avx512f", "avx2"}


def test_gain_on_avx512_bf16_names_the_instructions():
    text = precision.dtype_sentence(fake(0.5), features=AVX512_BF16, onednn=True)
    assert text.startswith("bfloat16: 2x faster than float32 (95% interval")
    assert "because this processor has AVX-512 BF16 instructions" in text
    assert "AMX tile instructions" in precision.dtype_sentence(fake(0.5), features=AMX, onednn=True)


def test_loss_on_avx2_only_says_the_opposite():
    text = precision.dtype_sentence(fake(2.5), features=AVX2_ONLY, onednn=True)
    assert text.startswith("bfloat16: 2.5x slower than float32 (95% interval")
    assert "no bfloat16 instructions (AVX2 only)" in text and "widened to float32" in text


def test_sentences_are_read_back_as_verdicts():
    from course_lib import lectures

    text = precision.dtype_sentence(fake(0.5), features=AVX512_BF16, onednn=True)
    assert lectures._verdicts_in_text(text) == {"bfloat16 | float32": "faster"}
    same = precision.dtype_sentence(fake(1.0), features=AVX2_ONLY, onednn=True)
    assert lectures._verdicts_in_text(same) == {"bfloat16 | float32": "no difference"}


def test_other_cases_stay_true_to_the_verdict():
    off = precision.dtype_sentence(fake(2.0), features=AVX512_BF16, onednn=False)
    assert "slower" in off and "oneDNN off" in off
    odd = precision.dtype_sentence(fake(0.5), features=AVX2_ONLY, onednn=True)
    assert "faster" in odd and "no bfloat16 instructions" in odd and "because this processor has" not in odd
    same = precision.dtype_sentence(fake(1.0), features=AVX2_ONLY, onednn=True)
    assert "no measurable difference" in same and "faster" not in same and "slower" not in same
    same_off = precision.dtype_sentence(fake(1.0), features=AVX512_BF16, onednn=False)
    assert "no measurable difference" in same_off and "oneDNN off" in same_off
    few = precision.dtype_sentence(fake(0.5, rounds=3), features=AVX512_BF16, onednn=True)
    assert "too few rounds" in few and "because" not in few
    for text in (off, odd, same, few):
        assert "None" not in text and "nan" not in text


def test_float16_sentence_names_the_library():
    r = fake(1.3)
    r.timings[1].name = "float16"
    text = precision.float16_sentence(r, "TensorFlow")
    assert text.startswith("float16: 1.3x slower than float32") and "saves memory here, not time" in text
    r = fake(0.5)
    r.timings[1].name = "float16"
    assert "half the bytes" in precision.float16_sentence(r, "TensorFlow")
    assert "oneDNN ran its kernel" in precision.float16_sentence(r, "oneDNN")


def test_mixed_policy_keeps_float32_variables():
    model = precision.mlp(16, "mixed_bfloat16")
    dtypes = precision.variable_dtypes(model)
    assert dtypes["hidden_0"] == "variables float32, compute bfloat16"
    assert dtypes["out"] == "variables float32, compute float32"
    assert all(w.dtype == "float32" for w in model.weights)
    x, _ = precision.regression_data(batch=4)
    assert model(x).dtype == tf.float32


def test_policy_adds_casts_to_the_train_step():
    x, y = precision.regression_data(batch=8)
    plain = precision.cast_count(precision.mlp(16, "float32"), x, y)
    mixed = precision.cast_count(precision.mlp(16, "mixed_bfloat16"), x, y)
    assert mixed > plain + 6  # at least a kernel and a bias cast per bfloat16 layer


def test_loss_trajectory_within_tolerance():
    reference = precision.loss_trajectory("float32", steps=12, width=32)
    mixed = precision.loss_trajectory("mixed_bfloat16", steps=12, width=32)
    assert reference[-1] < reference[0]  # it trains
    assert precision.trajectory_gap(mixed, reference) <= precision.LOSS_TOLERANCE
    assert precision.trajectory_gap(reference, reference) == 0
    assert "stayed within 3%" in precision.trajectory_sentence(mixed, reference)
    assert "outside" in precision.trajectory_sentence([2.0] * 12, reference)
    with pytest.raises(ValueError, match="same length"):
        precision.trajectory_gap(mixed[:3], reference)


def test_loss_scale_falls_after_a_planted_overflow_and_rises_again():
    rows = precision.loss_scale_run(precision.planted_overflow(steps=7, overflow_at=3), initial_scale=1024,
                                    growth_steps=2)
    scales = [r["scale after"] for r in rows]
    assert scales[2] == scales[1] / 2  # the overflow halves it
    assert not rows[2]["variable updated"] and rows[1]["variable updated"]
    assert scales[4] == scales[2] * 2  # two finite steps double it
    text = precision.scale_sentence(rows, 2)
    assert f"fell from {scales[1]:g} to {scales[2]:g}" in text and "rose again" in text


def test_float16_range_and_bfloat16_drift():
    rows = {r["value"]: r for r in precision.range_table()}
    assert rows["65504"]["as float16"] == "65504" and rows["100000"]["as float16"] == "inf"
    assert rows["100000"]["as bfloat16"] != "inf" and rows["1e-08"]["as float16"] == "0"
    assert abs(precision.running_sum(500, 0.01, "float32") - 5.0) < 1e-3
    assert abs(precision.running_sum(500, 0.01, "bfloat16") - 5.0) > 0.5  # increments lost once the sum grows
    scaled = precision.underflow_rows()[0]
    assert scaled["float16, unscaled"] == "0" and scaled["float16, scaled by 1024 then unscaled"] != "0"


@pytest.fixture(scope="module")
def quantized():
    model, x, y = precision.digits_classifier(width=64, epochs=2)
    return model, precision.quantized_models(model, precision.digits_data()[0][:1400]), x, y


def test_quantized_models_agree_within_the_bound(quantized):
    model, lites, x, y = quantized
    rows = {r["model"]: r for r in precision.agreement_rows(model, lites, x, y, rows=60)}
    assert set(rows) == set(precision.QUANTIZATIONS)
    assert rows["float32"]["largest difference from float32"] < 1e-5
    for kind in precision.QUANTIZATIONS:
        assert rows[kind]["largest difference from float32"] <= precision.AGREEMENT_BOUND, kind
        assert rows[kind]["same class as float32"] >= 0.95, kind
    assert rows["dynamic-range int8"]["size (KB)"] < rows["float16 weights"]["size (KB)"] < rows["float32"]["size (KB)"]
    assert lites["full integer int8"].interpreter.get_input_details()[0]["dtype"] == np.int8
    text = precision.agreement_sentence(list(rows.values()))
    assert "dynamic-range int8 is" in text and "smaller" in text


def test_full_integer_needs_a_representative_dataset(quantized):
    with pytest.raises(ValueError, match="representative dataset"):
        precision.convert(quantized[0], "full integer int8")
    with pytest.raises(ValueError, match="unknown quantization"):
        precision.convert(quantized[0], "int4")


def test_conversion_error_reads_the_converters_reason():
    exc = RuntimeError("loc(callsite(...)): error: 'tf.TensorListReserve' op requires element_shape to be static\n"
                       "more")
    assert precision.conversion_error(exc) == "'tf.TensorListReserve' op requires element_shape to be static"
    assert precision.conversion_error(ValueError("plain")) == "ValueError: plain"


def test_kernel_names_per_dtype():
    rows = precision.kernels_by_dtype(n=32, dtypes=("float32", "bfloat16"))
    ops = {(r["op"], r["dtype"]) for r in rows}
    assert ops == {("MatMul", "float32"), ("MatMul", "bfloat16"), ("Conv2D", "float32"), ("Conv2D", "bfloat16")}
    assert all(r["library"] in ("oneDNN", "TensorFlow") for r in rows)
    assert precision.kernel_sentence(rows).startswith("For the matmul, ")


def test_gpu_notes_without_a_gpu():
    rows = precision.gpu_state()
    assert len(rows) == len(tf.config.list_physical_devices("GPU"))
    text = precision.gpu_sentence(rows)
    assert ("no GPU" in text) == (not rows)
    fake_gpu = [{"GPU": "A100", "compute capability": "8.0", "TF32 for float32 matmuls": "on",
                 "Tensor Cores for TF32/bfloat16": "yes"}]
    assert "TF32 on" in precision.gpu_sentence(fake_gpu)


def test_sweep_rows_report_gflops():
    r = fake(0.5)
    r.params = {"flops": 2e6}
    r.title = "matmul"
    row = precision.sweep_rows([r])[0]
    assert row["float32 GFLOP/s"] == pytest.approx(2.0, rel=0.01)
    assert row["bfloat16 GFLOP/s"] == pytest.approx(4.0, rel=0.01)
    assert row["bfloat16 against float32"].startswith("2x faster")


def test_policy_sentence_fits_the_verdict():
    slow = fake(1.3)
    slow.timings[1].name = "mixed_bfloat16"
    text = precision.policy_sentence(slow, 32, casts=16)
    assert text.startswith("At width 32, mixed_bfloat16: 1.3x slower than float32 per training step")
    assert "too narrow" in text and "16 casts" in text
    fast = fake(0.4)
    fast.timings[1].name = "mixed_bfloat16"
    assert "saved more than" in precision.policy_sentence(fast, 1024)
    even = fake(1.0)
    even.timings[1].name = "mixed_bfloat16"
    assert "no measurable difference" in precision.policy_sentence(even, 128)
    from course_lib import lectures

    for r, call in ((slow, "slower"), (even, "no difference")):  # the same key whatever the call
        assert lectures._verdicts_in_text(precision.policy_sentence(r, 32)) == {
            "At width 32, mixed_bfloat16 | float32 per training step": call}
    assert "saved about what" in precision.policy_sentence(even, 128)
    few = fake(0.5, rounds=3)
    few.timings[1].name = "mixed_bfloat16"
    text = precision.policy_sentence(few, 64)
    assert "too few rounds" in text and "cannot tell" in text


def test_g2p_sentence_quotes_the_reason():
    rows = [{"part": "encoder (BiGRU)", "converts": "yes", "size or reason": "28.7 KB"},
            {"part": "greedy decoder (while loop)", "converts": "no", "size or reason": "op requires element_shape"}]
    text = precision.g2p_sentence(rows)
    assert "took the g2p encoder (BiGRU)" in text and '"op requires element_shape"' in text
    assert "refused" not in precision.g2p_sentence(rows[:1])


def test_half_log_sentence_only_where_the_line_is():
    line = "E0000 util.cc:131] oneDNN supports DT_HALF only on platforms with AVX-512. Falling back"
    assert "kept TensorFlow's own kernels" in precision.half_log_sentence(line, AVX512_BF16)
    assert "AVX-512F alone" in precision.half_log_sentence(line, AVX512_BF16)
    assert "AVX-512F alone" not in precision.half_log_sentence(line, AVX2_ONLY)
    assert "holds no line" in precision.half_log_sentence("", AVX2_ONLY)


def test_course_bench_precision_is_registered_and_runs_small(tmp_path, capsys):
    import json

    from course_lib import benchmarks

    command = benchmarks.commands()["precision"]
    assert getattr(command, "bench_command", None) == "precision"
    out = tmp_path / "precision.json"
    assert command(["--sizes", "32", "--conv-size", "8", "--widths", "8", "--repeats", "1", "--no-processes",
                    "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert [r["op"] for r in report["rows"]] == ["matmul 32 x 32", "conv2d 3x3, 8 x 8 x 8 x 32"]
    assert report["step_rows"][0]["width"] == 8 and report["process_rows"] == []
    assert "float32 GFLOP/s" in capsys.readouterr().out


@pytest.mark.slow
def test_onednn_on_and_off_in_fresh_processes():
    result = precision.onednn_comparison(64, repeats=1)
    assert result.names == ["float32, oneDNN on", "bfloat16, oneDNN on", "float32, oneDNN off", "bfloat16, oneDNN off"]
    assert all(v > 0 for v in precision.gflops(result, result.params["flops"]).values())
