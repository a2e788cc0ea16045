import collections
import itertools
import json
import sys

import numpy as np
import pytest
import tensorflow as tf

from course_lib import bench, host, tables
from course_lib.bench import rounds
from course_lib.benchmarks import tsp as tsp_bench


def test_measure_reports_first_call_apart_and_repeats():
    calls = []

    def fn():
        calls.append(1)
        return np.ones(3)

    t = bench.measure(fn, name="ones", repeats=4, warmup=2, number=3)
    assert t.name == "ones"
    assert len(t.times_s) == 4
    assert t.number == 3
    assert len(calls) == 1 + 2 + 4 * 3  # first call, warm-up, timed repeats
    lo, hi = t.spread_s
    assert lo <= t.median_s <= hi


def test_first_call_of_tf_function_includes_tracing():
    traces = []

    @tf.function
    def f(x):
        traces.append(1)
        return tf.reduce_sum(x * 2.0)

    x = tf.ones([100])
    t = bench.measure(lambda: f(x), repeats=3)
    assert len(traces) == 1
    assert t.first_call_s > t.median_s


def test_force_brings_tensors_to_numpy():
    out = bench.force({"a": tf.ones([2]), "b": [tf.zeros([1]), 3]})
    assert isinstance(out["a"], np.ndarray)
    assert isinstance(out["b"][0], np.ndarray) and out["b"][1] == 3


def test_compare_ratios_against_baseline_and_columns_are_stable():
    x = np.arange(10_000, dtype=np.float64)
    c = bench.compare({"slow": lambda: sum(x[:2000].tolist()), "fast": lambda: x.sum()},
                      baseline="slow", repeats=3, title="sum")
    assert c.names == ["slow", "fast"]
    assert c.speedup("slow") == pytest.approx(1.0)
    assert c.speedup("fast") == pytest.approx(c["slow"].median_s / c["fast"].median_s)
    d = json.loads(c.to_json())
    assert d["columns"] == list(bench.Comparison.COLUMNS)
    assert [v["name"] for v in d["variants"]] == ["slow", "fast"]
    assert d["machine"]["tensorflow"] == tf.__version__
    assert "<table>" in c._repr_html_() and "against the baseline" in repr(c)


def test_compare_calls_on_result_after_each_variant():
    seen = []
    bench.compare({"a": lambda: 1, "b": lambda: 2}, repeats=1,
                  on_result=lambda t, done, total: seen.append((t.name, done, total)))
    assert seen == [("a", 1, 2), ("b", 2, 2)]


def test_json_file_written(tmp_path):
    c = bench.compare({"a": lambda: 1}, repeats=1)
    path = tmp_path / "r.json"
    c.to_json(path)
    assert json.loads(path.read_text())["baseline"] == "a"


def test_machine_names_cpu_cores_and_devices():
    info = host.machine()
    assert info["cores"] >= 1
    assert info["tensorflow"] == tf.__version__
    assert any("CPU" in d for d in info["devices"])
    assert "TF" in host.machine_summary(info)


def test_cores_are_those_this_process_may_use(monkeypatch):
    monkeypatch.setattr(host.os, "sched_getaffinity", lambda pid: {0}, raising=False)  # as under taskset -c 0
    assert host.usable_cores() == 1
    assert "(1 core, " in host.machine_summary({"cpu": "X", "cores": 1, "cpu_flags": ["avx2"]})
    assert "(4 cores)" in host.machine_summary({"cpu": "X", "cores": 4})
    monkeypatch.delattr(host.os, "sched_getaffinity")  # a system without affinity: the machine's count
    assert host.usable_cores() == (host.os.cpu_count() or 1)


def test_bad_input_gives_clear_errors():
    def broken():
        raise ZeroDivisionError("nope")

    with pytest.raises(bench.BenchError, match=r"variant 'broken' raised ZeroDivisionError: nope"):
        bench.compare({"ok": lambda: 1, "broken": broken}, repeats=1)
    with pytest.raises(ValueError, match="repeats must be a whole number >= 1"):
        bench.measure(lambda: 1, repeats=0)
    with pytest.raises(ValueError, match="unknown baseline 'gpu'; variants are: a, b"):
        bench.compare({"a": lambda: 1, "b": lambda: 2}, baseline="gpu")
    with pytest.raises(ValueError, match="at least one variant"):
        bench.compare({})
    with pytest.raises(TypeError, match="'x' is not callable"):
        bench.measure(42, name="x")
    with pytest.raises(KeyError, match="no variant 'c'"):
        bench.compare({"a": lambda: 1}, repeats=1)["c"]


def _timing(name, times):
    return bench.Timing(name=name, first_call_s=times[0], times_s=list(times), number=1)


def _rounds(center, spread, n=15, seed=0):
    """``n`` synthetic per-round times around ``center`` seconds, relative noise ``spread``."""
    return list(center * (1 + spread * np.random.default_rng(seed).standard_normal(n)))


def _comparison(variants, twin):
    timings = [_timing(name, times) for name, times in variants.items()]
    return bench.Comparison(timings, baseline=timings[0].name, twin=_timing("twin", twin))


def test_each_round_runs_the_variants_in_a_seeded_shuffle_so_none_always_follows_the_same_one():
    names = ["a", "b", "c", "a (A/A)"]
    orders = [bench.round_order(names, r) for r in range(600)]
    assert orders[:20] == [bench.round_order(names, r) for r in range(20)]  # the same rounds, the same order
    assert all(sorted(order) == sorted(names) for order in orders) and len({tuple(o) for o in orders}) == 24
    # what ran just before each call, round boundaries included: a fixed rotation puts the twin after c and the
    # baseline after the twin in 3 of 4 rounds; shuffled, each follows each of the others in about a third
    sequence = [name for order in orders for name in order]
    for name in ("a", "a (A/A)"):
        before = collections.Counter(prev for prev, this in zip(sequence, sequence[1:]) if this == name)
        shares = [before[other] / sum(before.values()) for other in names if other != name]
        assert max(shares) < 0.4 and min(shares) > 0.27, (name, before)


def test_a_clear_difference_is_called_with_its_interval():
    c = _comparison({"naive": _rounds(1.0, 0.03), "prefetch": _rounds(0.5, 0.03, seed=1)},
                    twin=_rounds(1.0, 0.03, seed=2))
    lo, hi = c.interval("prefetch")
    assert lo <= c.speedup("prefetch") <= hi and 1.8 < lo and hi < 2.2
    assert c.apart("prefetch") and c.apart("naive", over="prefetch")
    assert c.verdict("prefetch").startswith(f"prefetch: {bench.ratio_text(c.speedup('prefetch'))} faster than naive "
                                            "(95% interval ")
    slower = c.verdict("naive", over="prefetch")
    assert slower.startswith("naive: ") and " slower than prefetch (95% interval " in slower
    assert slower.endswith("x)") and "floor" not in slower  # the ratio, the verdict, the interval: no method
    assert str(c.verdicts()).splitlines() == [f"- {c.verdict('prefetch')}"]
    assert [row[-1] for row in c.rows()] == ["baseline", "faster"]


def test_a_ratio_whose_interval_reaches_across_the_floor_is_too_close_to_call():
    # 5% apart under 3% noise against a quiet A/A pair: the interval reaches across the floor's edge, so a re-run
    # may fall on either side of it
    c = _comparison({"a": _rounds(1.0, 0.03), "b": _rounds(1 / 1.05, 0.03, seed=1)}, twin=_rounds(1.0, 0.005, seed=2))
    lo, hi = c.interval("b")
    assert lo < c.noise_floor < hi
    assert not c.apart("b") and not c.apart("a", over="b") and not c.settled("b")
    assert c.call("b") == c.call("a", over="b") == bench.TOO_CLOSE
    assert c.verdict("b").startswith("b against a: too close to call, ")
    assert c.verdict("b") == f"b against a: too close to call, {c.ratio_with_interval('b')}"
    assert [row[-1] for row in c.rows()] == ["baseline", "too close to call"]
    # 3% apart under 20% noise on both sides, the A/A pair as well: the floor is wide and holds the interval, but
    # the interval is too wide to rule out a difference that a quieter re-run would call
    wide = _comparison({"a": _rounds(1.0, 0.2), "b": _rounds(0.97, 0.2, seed=1)}, twin=_rounds(1.0, 0.2, seed=2))
    lo, hi = wide.interval("b")
    assert wide.noise_floor > 1.2 and 1 / wide.noise_floor < lo <= hi < wide.noise_floor
    assert (lo < 1 / bench.MIN_FLOOR or hi > bench.MIN_FLOOR) and wide.call("b") == bench.TOO_CLOSE
    assert wide.verdict("b") == f"b against a: too close to call, {wide.ratio_with_interval('b')}"


def test_no_difference_is_said_only_when_the_whole_interval_lies_within_the_least_floor():
    # the same code twice, timed precisely: the interval sits inside [1 / 1.05, 1.05]
    c = _comparison({"a": _rounds(1.0, 0.005), "b": _rounds(1.0, 0.005, seed=1)}, twin=_rounds(1.0, 0.005, seed=2))
    lo, hi = c.interval("b")
    assert 1 / bench.MIN_FLOOR < lo <= hi < bench.MIN_FLOOR
    assert c.settled("b") and not c.apart("b") and c.call("b") == "no difference"
    assert c.verdict("b").startswith("b against a: no measurable difference, ")
    assert c.verdict("b") == f"b against a: no measurable difference, {c.ratio_with_interval('b')}"
    assert [row[-1] for row in c.rows()] == ["baseline", "no difference"]
    assert c.to_dict()["variants"][1]["verdict"] == "no difference"
    assert c.uncalled("b") == "no measurable difference"
    # 2.5% apart, timed precisely: clear of 1, but under the least difference ever called. A difference was
    # measured, so the words say so: settled, too small to call, never "no measurable difference"
    small = _comparison({"a": _rounds(1.0, 0.002), "b": _rounds(1 / 1.025, 0.002, seed=1)},
                        twin=_rounds(1.0, 0.002, seed=2))
    lo, hi = small.interval("b")
    assert 1 < lo <= hi < bench.MIN_FLOOR and small.call("b") == bench.TOO_SMALL
    assert small.settled("b") and not small.apart("b")
    assert small.verdict("b").startswith("b against a: a difference too small to call, 1.02x (95% interval ")
    assert small.judged("b").startswith("a difference too small to call, ")
    assert "no measurable" not in small.verdict("b") + small.judged("b")
    assert [row[-1] for row in small.rows()] == ["baseline", bench.TOO_SMALL]
    assert small.uncalled("b") == "a measured difference too small to call"


def test_an_uncalled_pair_is_worded_by_where_its_interval_lies():
    noisy_twin = [t * f for t, f in zip(_rounds(1.0, 0.005), [0.7, 1.4] * 8)]
    clear_of_one = _comparison({"a": _rounds(1.0, 0.005), "b": _rounds(1 / 1.1, 0.005, seed=1)}, twin=noisy_twin)
    assert clear_of_one.call("b") == bench.TOO_CLOSE and clear_of_one.interval("b")[0] > 1
    assert clear_of_one.uncalled("b") == "a measured difference too close to the noise floor to call"
    mixed = _comparison({"a": _rounds(1.0, 0.005), "b": [t * f for t, f in zip(_rounds(1.0, 0.005), [0.8, 1.25] * 8)]},
                        twin=_rounds(1.0, 0.005, seed=2))
    lo, hi = mixed.interval("b")
    assert mixed.call("b") == bench.TOO_CLOSE and lo < 1 < hi
    assert mixed.uncalled("b") == "too close to call either way"
    fast = _comparison({"a": _rounds(1.0, 0.005), "b": _rounds(0.5, 0.005, seed=1)}, twin=_rounds(1.0, 0.005, seed=2))
    assert fast.uncalled("b") == "faster" and fast.uncalled("a", over="b") == "slower"


def test_the_noise_floor_is_the_a_a_pair_interval_and_a_difference_must_clear_it():
    # 10% apart, timed precisely, but the baseline against itself varies by far more: not called
    noisy_twin = [t * f for t, f in zip(_rounds(1.0, 0.005), [0.7, 1.4] * 8)]
    c = _comparison({"a": _rounds(1.0, 0.005), "b": _rounds(1 / 1.1, 0.005, seed=1)}, twin=noisy_twin)
    assert c.noise_floor > 1.1
    lo, hi = c.interval("b")
    assert lo > 1.05 and hi < c.noise_floor  # clears the least floor, not the measured one
    assert not c.apart("b")
    # inside the floor but past the least floor: a difference only the floor's width hides, which a re-run with a
    # narrower floor may call, so neither "no difference" nor a difference
    assert not c.settled("b") and c.call("b") == bench.TOO_CLOSE
    assert c.verdict("b").startswith("b against a: too close to call, ")
    quiet = _comparison({"a": _rounds(1.0, 0.005), "b": _rounds(1 / 1.1, 0.005, seed=1)},
                        twin=_rounds(1.0, 0.005, seed=3))
    assert quiet.noise_floor == bench.MIN_FLOOR and quiet.apart("b")
    assert bench.Comparison([_timing("a", [1.0, 1.0])], baseline="a").noise_floor == bench.MIN_FLOOR


def test_a_bimodal_spread_gives_a_wide_interval_and_a_verdict_only_where_both_modes_agree():
    # lecture 00's busy run: calls either get a core (about 1.2 ms) or share one (about 14 ms); the median falls
    # between the modes and quartiles stretch from one to the other
    quiet = _rounds(1.0e-3, 0.03)
    busy = [1.21e-3, 14.1e-3, 7.46e-3, 1.3e-3, 13.0e-3, 1.25e-3, 14.5e-3, 12.8e-3, 1.22e-3, 13.9e-3, 1.4e-3,
            14.0e-3, 7.0e-3, 1.3e-3, 13.5e-3]
    c = bench.Comparison([_timing("quiet", quiet), _timing("busy", busy)], baseline="quiet")
    lo, hi = c.interval("busy")
    assert hi / lo > 3  # the interval says how unsure the median is
    assert c.apart("busy") and " slower than quiet" in c.verdict("busy")  # both modes are slower: called
    # one mode as fast as the baseline, the other far slower: the interval reaches 1, so nothing is called
    mixed = [1.0e-3 if i % 2 else 14e-3 for i in range(15)]
    c = bench.Comparison([_timing("quiet", quiet), _timing("mixed", mixed)], baseline="quiet")
    assert not c.apart("mixed") and c.call("mixed") == bench.TOO_CLOSE and "too close to call" in c.verdict("mixed")


def test_the_bootstrap_is_deterministic_given_the_timings():
    a, b = _rounds(1.0, 0.1), _rounds(0.9, 0.1, seed=1)
    assert bench.ratio_interval(a, b) == bench.ratio_interval(list(a), list(b))
    c1 = _comparison({"a": a, "b": b}, twin=_rounds(1.0, 0.1, seed=2))
    c2 = _comparison({"a": a, "b": b}, twin=_rounds(1.0, 0.1, seed=2))
    assert c1.verdict("b") == c2.verdict("b") and c1.to_dict() == c2.to_dict()
    assert bench.ratio_interval(a, b) != bench.ratio_interval(a, _rounds(0.9, 0.1, seed=5))
    with pytest.raises(ValueError, match="at least one time on each side"):
        bench.ratio_interval([], [1.0])


def test_rounds_are_paired_so_a_slow_round_slows_both_sides():
    # every round's load moves both variants alike: paired, the ratio is exact despite 50% drift across rounds
    load = [1.0, 1.5, 0.8, 1.3, 1.1, 0.9, 1.4, 1.0, 1.2]
    lo, hi = bench.ratio_interval([2 * x for x in load], load)
    assert lo == pytest.approx(2.0) and hi == pytest.approx(2.0)


def test_ratio_text_stays_readable_at_both_ends():
    assert bench.ratio_text(2.314) == "2.31x"
    assert bench.ratio_text(0.25) == "0.25x"
    assert bench.ratio_text(1 / 226) == "226x slower"
    assert bench.ratio_text(1234.0) == "1,234x"


def test_a_text_table_of_dicts_heads_with_the_keys_and_formats_floats():
    text = tables.text_table_of([{"move": "copy", "ms": 1.23456, "n": 3}, {"move": "view", "ms": 0.5, "n": 12}], ".2f")
    assert text.splitlines() == ["move  ms    n", "copy  1.23  3", "view  0.50  12"]
    assert tables.text_table_of([]) == "(no rows)"


def test_a_speedup_column_writes_every_slower_row_the_same_way():
    assert [bench.speedup_text(r) for r in (2.314, 1.0, 1 / 1.58, 0.223, 1 / 226)] == [
        "2.31x", "1x", "1.58x slower", "4.48x slower", "226x slower"]


def test_compare_times_every_variant_and_the_baselines_twin_in_each_round():
    calls = []
    cmp = bench.compare({v: lambda v=v: calls.append(v) for v in "abc"}, baseline="a",
                        repeats=4, warmup=1, number=1)
    # first calls, one warm-up round, then timed rounds of a, b, c and a's twin, each in its round's order;
    # blocks of 4 rounds, more of them while a ratio is unsettled (these calls take microseconds: noise decides)
    rounds = len(cmp.twin.times_s)
    assert rounds in range(4, 4 * bench.MOST_ROUNDS + 1, 4)
    assert "".join(calls) == "abc" + "abc" + "".join("".join(bench.round_order("abca", r)) for r in range(rounds))
    assert cmp.names == ["a", "b", "c"] and cmp.twin.name == "a (A/A)"
    assert all(len(t.times_s) == rounds and t.number == 1 for t in cmp.timings)
    assert json.loads(cmp.to_json())["twin"]["name"] == "a (A/A)"
    many = bench.compare({"a": lambda: 1}, number=5, repeats=2)
    assert many["a"].number == 5
    with pytest.raises(ValueError, match="drop in_turns=False"):
        bench.compare({"a": lambda: 1}, in_turns=False)
    with pytest.raises(bench.BenchError, match="variant .b. raised ZeroDivisionError"):
        bench.compare({"a": lambda: 1, "b": lambda: 1 / 0})


def _cycling(values):
    it = itertools.cycle(values)
    return lambda: next(it)


def _unsettled():
    """b's rounds alternate between 1.0 and 1.2 against a steady 1.0: its interval straddles the floor's edge
    however many rounds are run."""
    timers = {"a": _cycling([1.0]), "b": _cycling([1.0, 1.2]), "c": _cycling([0.5])}
    return bench.compare_timers(timers, {"a": 1.0, "b": 1.0, "c": 0.5}, baseline="a", repeats=5)


def test_an_unsettled_ratio_gets_more_rounds_and_a_settled_one_does_not():
    cmp = _unsettled()  # its rounds cost no time, so it gets every block allowed
    assert not cmp.settled("b") and cmp.settled("c") and cmp.apart("c") and not cmp.apart("b")
    assert (cmp.call("b"), cmp.call("c")) == (bench.TOO_CLOSE, "faster")
    assert len(cmp["b"].times_s) == len(cmp.twin.times_s) == bench.MOST_ROUNDS * 5 and cmp.repeats == 5
    assert cmp.looks == len(bench.LOOK_BLOCKS) and cmp.confidence == pytest.approx(1 - 0.05 / cmp.looks)
    clear = bench.compare_timers({"a": _cycling([1.0]), "c": _cycling([0.5])}, {"a": 1.0, "c": 0.5},
                                 baseline="a", repeats=5)
    assert clear.settled("c") and len(clear["c"].times_s) == 5


def test_rounds_past_the_time_budget_stop_after_the_least_extra_blocks(monkeypatch):
    monkeypatch.setattr(rounds, "SETTLE_S", 0.0)  # every round now counts as over the budget
    cmp = _unsettled()
    assert cmp.call("b") == bench.TOO_CLOSE and len(cmp["b"].times_s) == bench.MORE_ROUNDS * 5


def test_more_rounds_settle_a_ratio_that_few_rounds_leave_lumpy():
    # b is 1.25x faster in most rounds, but one round in five is as slow as a: 5 or 10 rounds leave the interval
    # (widened for the looks) across the floor, more rounds bring its lower end above it
    timers = {"a": _cycling([1.0]), "b": _cycling([0.8, 0.8, 0.8, 0.8, 1.0])}
    cmp = bench.compare_timers(timers, {"a": 1.0, "b": 0.8}, baseline="a", repeats=5)
    assert cmp.call("b") == "faster" and 5 < cmp.rounds < bench.MOST_ROUNDS * 5


def test_compare_timers_takes_any_way_of_timing_a_round():
    seen = []
    timers = {"a": lambda: seen.append("a") or 2.0, "b": lambda: seen.append("b") or 1.0}
    twin = lambda: seen.append("a2") or 2.0  # noqa: E731
    c = bench.compare_timers(timers, {"a": 5.0, "b": 4.0}, baseline="a", repeats=5, twin=twin)
    names = {"a": "a", "b": "b", bench.TWIN: "a2"}
    assert seen == [names[n] for r in range(5) for n in bench.round_order(["a", "b", bench.TWIN], r)]
    assert c.speedup("b") == 2.0 and c["a"].first_call_s == 5.0 and c.twin.times_s == [2.0] * 5
    assert c.apart("b") and c.noise_floor == bench.MIN_FLOOR
    with pytest.raises(ValueError, match="unknown baseline 'z'"):
        bench.compare_timers(timers, {}, baseline="z", repeats=1)


def test_text_table_fits_long_variant_names():
    slow = bench.Timing("tf.function train_step, a long name", 0.2, [0.1, 0.1, 0.1], 1)
    fast = bench.Timing("short", 0.1, [0.05, 0.05, 0.05], 1)
    lines = repr(bench.Comparison([slow, fast], baseline="short")).splitlines()
    assert lines[1].startswith("tf.function train_step, a long name  ")  # the name never runs into a number


def test_machine_says_whether_onednn_is_on(monkeypatch):
    assert host.machine()["onednn"] == {True: "on", False: "off", None: "unknown"}[host.onednn_enabled()]
    # without the wheel's own answer, TF_ENABLE_ONEDNN_OPTS decides, and nothing set means unknown
    import tensorflow.python.util as util

    monkeypatch.delattr(util, "_pywrap_util_port", raising=False)
    monkeypatch.setitem(sys.modules, "tensorflow.python.util._pywrap_util_port", None)
    for flag, on in (("0", False), ("1", True), ("True", True), ("off", False)):
        monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", flag)
        assert host.onednn_enabled() is on, flag
    monkeypatch.delenv("TF_ENABLE_ONEDNN_OPTS")
    assert host.onednn_enabled() is None


# -- each pair against its own noise, enough rounds, repeated looks, one notation ---------------------------------

def test_a_quiet_pair_beside_a_noisy_baseline_is_judged_on_its_own_floor():
    # eager jitters by 30% (its A/A pair as well); xla and autograph are steady, 1.6x apart
    c = _comparison({"eager": _rounds(1.0, 0.3), "xla": _rounds(0.1, 0.01, seed=1),
                     "autograph": _rounds(0.16, 0.01, seed=2)}, twin=_rounds(1.0, 0.3, seed=3))
    assert c.noise_floor > 1.2 and c.floor("xla", "autograph") == c.floor("autograph", "xla") == bench.MIN_FLOOR
    assert c.own_floor("xla") == bench.MIN_FLOOR and c.own_floor("eager") == c.noise_floor
    assert c.call("xla", "autograph") == "faster" and c.call("autograph", "xla") == "slower"
    ratio_words, interval = c.ratio_with_interval("xla", "autograph").split(" (")
    assert c.verdict("xla", "autograph") == f"xla: {ratio_words} than autograph ({interval}"
    # a pair with the baseline in it is still judged on the baseline's A/A pair
    assert c.floor("xla") == c.floor("eager", "xla") == c.noise_floor
    # a noisy member brings its own floor to the pair: the interval of a 1.1x difference stays inside it
    noisy = _comparison({"eager": _rounds(1.0, 0.01), "xla": _rounds(0.1, 0.3, seed=1),
                         "autograph": _rounds(0.11, 0.01, seed=2)}, twin=_rounds(1.0, 0.01, seed=3))
    assert noisy.noise_floor == bench.MIN_FLOOR and noisy.own_floor("xla") > 1.2
    assert noisy.floor("autograph", "xla") == noisy.own_floor("xla")
    assert noisy.call("autograph", "xla") == bench.TOO_CLOSE


def test_a_variants_own_floor_sets_it_against_itself_in_adjacent_rounds():
    c = _comparison({"a": _rounds(1.0, 0.01), "b": [1.0, 1.3] * 5}, twin=_rounds(1.0, 0.01, seed=1))
    # rounds 1 and 2, 3 and 4, ...: every pair is 1.3x apart, so the floor is 1.3x
    assert c.own_floor("b") == pytest.approx(1.3)
    lo, hi = bench.ratio_interval([1.0] * 5, [1.3] * 5)
    assert c.own_floor("b") == pytest.approx(max(hi, 1 / lo))


def test_fewer_than_the_least_rounds_give_no_interval_and_no_verdict():
    assert bench.MIN_ROUNDS == 5
    four = _comparison({"a": _rounds(1.0, 0.01, n=4), "b": _rounds(0.5, 0.01, n=4, seed=1)},
                       twin=_rounds(1.0, 0.01, n=4, seed=2))
    assert not four.enough_rounds("b") and four.call("b") == bench.TOO_FEW
    assert not four.apart("b") and not four.settled("b")
    assert four.verdict("b") == "b against a: too few rounds to judge (4; at least 5 needed)"
    assert four.judged("b") == "too few rounds to judge (4; at least 5 needed)" and four.ratio_with_interval("b") == ""
    assert four.rows()[1][-2:] == ("no interval from 4 rounds (at least 5 needed)", bench.TOO_FEW)
    assert "interval" not in four.verdict("b").replace("no interval", "") and "95%" not in repr(four)
    assert four.to_dict()["variants"][1]["interval"] is None
    five = _comparison({"a": _rounds(1.0, 0.01, n=5), "b": _rounds(0.5, 0.01, n=5, seed=1)},
                       twin=_rounds(1.0, 0.01, n=5, seed=2))
    assert five.call("b") == "faster" and "(95% interval " in five.verdict("b")


def test_rounds_asked_for_below_the_least_are_run_until_there_are_enough():
    # one round a block: blocks 1, 2 and 4 hold too few rounds to judge, so the first look is at 8
    cmp = bench.compare_timers({"a": _cycling([1.0]), "b": _cycling([0.5])}, {"a": 1.0, "b": 0.5},
                               baseline="a", repeats=1)
    assert cmp.rounds == 8 and cmp.call("b") == "faster" and cmp.looks == 1


def test_each_look_widens_the_interval_so_the_one_reported_keeps_95_percent():
    assert [bench.looks(r) for r in (1, 2, 3, 4, 5, 50)] == [1, 2, 3, 3, 4, 4]
    a, b = _rounds(1.0, 0.1, n=20), _rounds(0.9, 0.1, n=20, seed=1)
    once = bench.Comparison([_timing("a", a), _timing("b", b)], baseline="a")
    looked = bench.Comparison([_timing("a", a), _timing("b", b)], baseline="a", repeats=5, looks=4)
    assert once.confidence == 0.95 and looked.confidence == pytest.approx(0.9875)
    (lo1, hi1), (lo4, hi4) = once.interval("b"), looked.interval("b")
    assert lo4 < lo1 < hi1 < hi4
    assert looked.interval("b") == bench.ratio_interval(a, b, 0.9875)
    # the caption gives the measured floor only: what the looks do to an interval, lecture 00 says once
    assert "noise floor 1.05x, the least: no A/A pair timed" in repr(looked) and "98.75" not in repr(looked)
    with pytest.raises(ValueError, match="confidence must lie between 0 and 1"):
        bench.ratio_interval(a, b, 95)


def test_repeated_looks_at_identical_code_keep_the_reported_interval_on_1_at_least_95_percent_of_runs():
    # the same code twice, 10% noise per call: the reported interval should hold 1. Seeded, so deterministic.
    rng = np.random.default_rng(7)
    missed = 0
    runs = 200
    for _ in range(runs):
        def noisy():
            return float(np.exp(0.1 * rng.standard_normal()))

        cmp = bench.compare_timers({"a": noisy, "b": noisy}, {"a": 1.0, "b": 1.0}, baseline="a", repeats=5)
        lo, hi = cmp.interval("b")
        missed += not lo <= 1 <= hi
    assert missed / runs <= 0.05


def test_one_notation_for_an_interval_in_tables_and_sentences():
    c = _comparison({"naive": _rounds(1.0, 0.01), "slow": _rounds(1.17, 0.01, seed=1),
                     "fast": _rounds(0.5, 0.01, seed=2), "same": _rounds(1.0, 0.01, seed=3)},
                    twin=_rounds(1.0, 0.01, seed=4))
    cells = {row[0]: row[4] for row in c.rows()}
    for name, word in (("slow", "slower"), ("fast", "faster")):
        assert cells[name] == c.judged(name) == c.ratio_with_interval(name)
        ratio_words, interval = cells[name].split(" (95% interval ")
        assert ratio_words.endswith(f"x {word}")
        assert c.verdict(name) == f"{name}: {ratio_words} than naive (95% interval {interval}"
    lo, hi = c.interval("slow")  # a slower variant's interval is written how many times slower, like its headline
    assert cells["slow"].endswith(f"(95% interval {1 / hi:.3g}–{1 / lo:.3g}x)")
    # a ratio the verdict did not call is written without a direction, and never without its verdict
    assert c.judged("same") == f"no measurable difference, {cells['same']}"
    assert " faster" not in cells["same"] and " slower" not in cells["same"]
    assert cells["same"] in c.verdict("same") and cells["naive"] == ""
    assert f"<td><b>{cells['slow']}</b></td><td>slower</td>" in c._repr_html_()


def test_a_pair_too_close_to_call_names_its_own_floor():
    c = _comparison({"a": _rounds(1.0, 0.01), "b": _rounds(1.0, 0.2, seed=1), "c": _rounds(0.97, 0.2, seed=2)},
                    twin=_rounds(1.0, 0.01, seed=3))
    assert c.call("c", "b") == bench.TOO_CLOSE
    assert c.verdict("c", "b").startswith("c against b: too close to call, ")
    assert c.verdict("c", "b") == f"c against b: too close to call, {c.ratio_with_interval('c', 'b')}"


def test_two_readings_of_one_pair_say_whether_their_intervals_agree():
    alone = _comparison({"a": _rounds(1.0, 0.01), "b": _rounds(0.5, 0.01, seed=1)}, twin=_rounds(1.0, 0.01, seed=2))
    near = _comparison({"a": _rounds(1.0, 0.01, seed=3), "b": _rounds(0.5, 0.01, seed=4)},
                       twin=_rounds(1.0, 0.01, seed=5))
    beside = _comparison({"a": _rounds(0.8, 0.01, seed=3), "b": _rounds(0.5, 0.01, seed=4)},
                         twin=_rounds(0.8, 0.01, seed=5))
    labels = ("alone", "beside c")
    agree = bench.two_readings(alone, near, "b", labels=labels)
    assert agree.startswith(f"b against a alone: {alone.judged('b')}; beside c: {near.judged('b')}.")
    assert agree.endswith("overlap: the rounds cannot tell the two readings apart.") and "ms" not in agree
    differ = bench.two_readings(alone, beside, "b", labels=labels)
    assert "do not overlap" in differ
    assert f"a took {alone['a'].median_s * 1e3:.3g} ms a call alone and {beside['a'].median_s * 1e3:.3g} ms beside c" \
        in differ
    few = _comparison({"a": _rounds(1.0, 0.01, n=4), "b": _rounds(0.5, 0.01, n=4)}, twin=_rounds(1.0, 0.01, n=4))
    assert "overlap" not in bench.two_readings(alone, few, "b", labels=labels)


def test_the_largest_gain_is_named_only_where_its_interval_clears_every_other():
    def reading(slow, fast, spread, seed):
        return _comparison({"a": _rounds(slow, spread, seed=seed), "b": _rounds(fast, spread, seed=seed + 1)},
                           twin=_rounds(slow, spread, seed=seed + 2))

    small, large = reading(1.0, 0.5, 0.01, 0), reading(1.0, 0.25, 0.01, 3)  # 2x and 4x, narrow intervals
    assert bench.largest_gain({"small": small, "large": large}, "b") == "large"
    assert bench.largest_gain({"small": small, "large": large}, "a", over="b") == "small"
    # 2x against 2.1x in wide intervals that overlap: a re-run may rank them either way
    wide = {"small": reading(1.0, 0.5, 0.3, 6), "large": reading(1.0, 0.476, 0.3, 9)}
    assert max(wide["small"].interval("b")[0], wide["large"].interval("b")[0]) <= \
        min(wide["small"].interval("b")[1], wide["large"].interval("b")[1])
    assert bench.largest_gain(wide, "b") is None
    few = _comparison({"a": _rounds(1.0, 0.01, n=4), "b": _rounds(0.1, 0.01, n=4)}, twin=_rounds(1.0, 0.01, n=4))
    assert bench.largest_gain({"small": small, "few": few}, "b") is None


def test_an_interval_bound_off_1_is_never_written_as_1():
    # a verdict reads the interval's side of 1: its text must not put a bound on 1 that is not
    assert bench.interval_bounds(1.0004, 1.3612) == "1.0004–1.36"
    assert bench.interval_bounds(0.99951, 1.2) == "0.9995–1.2"
    assert bench.interval_bounds(1.0, 2.5) == "1–2.5" and bench.interval_bounds(0.5, 123.4) == "0.5–123"
    assert bench.interval_text(1.0004, 1.36) == "(95% interval 1.0004–1.36x)"


def test_tsp_gaps_read_without_a_negative_zero():
    assert [tsp_bench.percent(g) for g in (-0.001, 0.5234, -0.25)] == ["0.00", "0.52", "-0.25"]
    assert tsp_bench.percent(-0.004, "+") == "+0.00" and tsp_bench.percent(0.6, "+") == "+0.60"
    (line,) = tsp_bench.gap_summary({"memetic GA": [0.52, -0.001, 0.46]})
    assert line.endswith("% above LKH-3: 0.52, 0.00, 0.46; median 0.46, largest 0.52")
