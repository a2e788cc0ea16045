"""course_lib.lessons.applications: the GAs reaching known optima on small instances, loadable models,
widget builders, races against time, tables and readings."""

import numpy as np
import pytest

from course_lib.lessons import applications as app

# -- TSP ------------------------------------------------------------------------------------------------


def test_the_tsp_ga_finds_the_optimal_circle_tour():
    xy = app.cities("circle", 12, seed=0)
    model = app.tsp_model(xy, mode="graph")
    result = model.evolve(app.tour_population(64, 12, seed=0), generations=80)
    assert app.is_tour(result.best, 12)
    assert result.best_fitness == pytest.approx(app.optimal_length("circle", 12), rel=1e-5)
    assert app.tour_length(result.best, app.distance_matrix(xy)) == pytest.approx(result.best_fitness, rel=1e-5)


@pytest.mark.slow
def test_a_loadable_tsp_model_solves_another_city_set_without_compiling_again():
    sets = [app.cities(kind, 16, seed=1) for kind in ("random", "circle", "grid")]
    start = app.tour_population(32, 16, seed=0)
    model = app.tsp_model(sets[0], seed=0, loadable=True)
    counts = []
    for xy in sets:
        model.fitness.load(xy)
        result = model.evolve(start, generations=15)
        counts.append(model.trace_count)
        alone = app.tsp_model(xy, seed=0).evolve(start, generations=15)
        np.testing.assert_array_equal(result.best, alone.best)
        np.testing.assert_array_equal(result.history["best"], alone.history["best"])
    assert counts[0] > 0 and counts == [counts[0]] * 3  # one compile for three city sets
    with pytest.raises(ValueError, match="compiled for instances of size 16, got one of size 25"):
        model.fitness.load(app.cities("random", 25))
    with pytest.raises(ValueError, match="loadable=True cannot be combined with local_search"):
        app.tsp_model(sets[0], loadable=True, local_search=app.memetic_ops())


def test_a_loadable_knapsack_model_equals_one_built_for_the_instance():
    instances = [app.knapsack_instance(12, seed=3), app.knapsack_instance(12, seed=3, correlated=True)]
    genes = np.random.default_rng(0).integers(0, 2, (32, 12)).astype("int32")
    model = app.knapsack_model(instances[0], mode="graph", seed=0, loadable=True)
    for inst in instances:
        model.fitness.load(**inst)
        result = model.evolve(genes, generations=20)
        alone = app.knapsack_model(inst, mode="graph", seed=0).evolve(genes, generations=20)
        np.testing.assert_array_equal(result.best, alone.best)
        assert result.best_fitness == alone.best_fitness


@pytest.mark.slow
def test_the_widget_builders_reuse_a_compiled_model_only_for_the_same_model_and_cities():
    same = app.tsp_model(app.cities("random", 10, seed=0), seed=0)
    other_cities = app.tsp_model(app.cities("random", 10, seed=1), seed=0)
    builders, found = app.tsp_variants(2, seed=0, ga_population=16, compiled=[other_cities, same, None])
    builders["GA"](cities=10)()
    assert same.trace_count > 0 and other_cities.trace_count == 0
    assert found["GA"]["best"] == same.evolve(app.tour_population(16, 10, seed=0), generations=2,
                                              chunk=app.GA_CHUNK).best_fitness
    graph = app.tsp_model(app.cities("random", 10, seed=0), seed=0, mode="graph")
    builders, _ = app.tsp_variants(2, seed=0, ga_population=16, compiled=[graph])
    builders["GA"](cities=10)()
    assert graph.trace_count == 0


@pytest.mark.slow
def test_the_widget_runs_each_ga_to_the_quality_of_one_descent_or_its_generation_cap():
    d = app.distance_matrix(app.cities("random", 12, seed=0))
    goal = app.tour_length(app.two_opt(app.nearest_neighbour_tour(d), d), d)
    builders, found = app.tsp_variants(400, seed=0, ga_population=32)
    for name in builders:
        builders[name](cities=12)()
    assert found["NN + 2-opt (NumPy)"] == {"best": goal, "generations": None, "reached": True}
    for name in ("GA", "memetic GA"):
        run = found[name]
        assert run["reached"] == (run["best"] <= goal)
        assert run["generations"] == 400 or (run["reached"] and run["generations"] < 400)


def test_nearest_neighbour_tours_start_where_the_multi_start_search_starts():
    d = app.distance_matrix(app.cities("random", 20, seed=1))
    tours = app.nearest_neighbour_tours(d, 4, seed=2)
    assert tours.shape == (4, 20) and len(set(tours[:, 0])) == 4
    first = app.multi_start(d, float("inf"), starts=1, seed=2)
    assert first.lengths[0] == pytest.approx(app.tour_length(app.local_search(tours[0], d), d))
    with pytest.raises(ValueError, match="count must be between 1 and the 20 cities"):
        app.nearest_neighbour_tours(d, 21)


def test_multi_start_counts_descents_and_keeps_the_best():
    d = app.distance_matrix(app.cities("random", 20, seed=1))
    trace = app.multi_start(d, float("inf"), starts=5, seed=2)
    assert trace.work == "5 descents" and len(trace.seconds) == 5
    assert trace.lengths == sorted(trace.lengths, reverse=True)  # best so far never gets worse
    assert app.tour_length(trace.tour, d) == pytest.approx(trace.lengths[-1])
    assert trace.length_at(-1) == np.inf and trace.time_to(trace.lengths[-1]) <= trace.seconds[-1]
    random_starts = app.multi_start(d, float("inf"), starts=2, start="random")
    assert random_starts.method.startswith("random")
    with pytest.raises(ValueError, match="start must be"):
        app.multi_start(d, 1.0, start="greedy")
    with pytest.raises(ValueError, match="clock must be one of wall, cpu"):
        app.multi_start(d, 1.0, clock="gpu")
    assert app.multi_start(d, float("inf"), starts=1, clock="cpu").clock == "cpu"


def test_quality_table_and_readings_follow_the_numbers():
    tour = np.arange(5)
    traces = {"local search": app.Trace("local search", [0.1, 0.5], [10.0, 9.0], tour, "2 descents", 0.5),
              "GA": app.Trace("GA", [2.0, 3.0], [12.0, 9.9], tour, "20 generations of 8", 3.0),
              "memetic GA": app.Trace("memetic GA", [2.0, 2.5, 6.0], [11.0, 8.5, 8.0], tour,
                                      "30 generations of 4", 5.0)}
    rows = {r["method"]: r for r in app.quality_table(traces, 4.0)}
    assert rows["memetic GA"]["length"] == 8.5 and rows["memetic GA"]["% above shortest"] == 0.0
    assert rows["GA"]["% above shortest"] == pytest.approx(16.47, abs=0.01)
    assert rows["local search"]["s to within 1%"] == "never" and rows["memetic GA"]["s to within 1%"] == 2.5
    text = app.time_to_quality_reading("5 cities", traces, 4.0)
    assert "GA's best tour was 10.0% longer" in text and "memetic GA's best tour was 5.6% shorter" in text
    assert "first matched the local search after 2.5 s" in text
    assert "(CPU s per wall s): local search 1.0, GA 1.0, memetic GA 0.8" in text
    assert "no tour yet" in app.time_to_quality_reading("x", traces, 1.0)
    traces["GA"] = app.Trace("GA", [2.0, 3.0], [20.0, 19.8], tour, "20 generations of 8", 3.0)
    assert "GA's best tour was 2.2x as long (19.800)" in app.time_to_quality_reading("5 cities", traces, 4.0)


def test_knob_effects_separate_settings_only_beyond_the_spread_of_starts():
    runs = {"reference": {"lengths": [10.0, 11.0, 12.0], "median": 11.0, "seconds": 0.5, "times": [0.4, 0.5, 0.6]},
            "apart": {"lengths": [8.0, 8.5, 9.0], "median": 8.5, "seconds": 1.0, "times": [1.0, 1.0, 1.2]},
            "overlapping": {"lengths": [9.0, 10.5, 13.0], "median": 10.5, "seconds": 0.5, "times": [0.5] * 3}}
    lines = app.knob_effects(runs, 100)
    assert lines[0] == "100 generations per run, 3 starts per setting:"
    assert lines[2].startswith("apart: median best 8.500 (starts 8.000-9.000), 22.7% shorter")
    assert lines[2].endswith("; 1.00 s a run (1.00-1.20)")
    assert "within the run-to-run spread" in lines[3] and "shorter" not in lines[3]


@pytest.mark.slow
def test_knob_runs_run_equal_generations_from_each_start():
    runs = app.knob_runs(app.cities("random", 12), 5, {"reference": {}, "population 16": {"population": 16}},
                         starts=2)
    assert set(runs) == {"reference", "population 16"} and runs["population 16"]["population"] == 16
    for r in runs.values():
        assert len(r["lengths"]) == len(r["times"]) == 2 and len(r["history"]) == 5
        assert r["median"] == np.median(r["lengths"]) and r["seconds"] == np.median(r["times"])
    with pytest.raises(ValueError, match="unknown GA knob"):
        app.knob_runs(app.cities("random", 10), 1, {"x": {"learning_rate": 0.1}})


def test_a_tour_plot_draws_the_closed_tour():
    xy = app.cities("grid", 16)
    ax = app.plot_tour(xy, app.nearest_neighbour_tour(app.distance_matrix(xy)), title="nn")
    line = ax.lines[0]
    assert len(line.get_xdata()) == 17 and ax.get_title() == "nn"


# -- knapsack --------------------------------------------------------------------------------------


def test_the_knapsack_ga_reaches_the_dp_optimum():
    inst = app.knapsack_instance(16, seed=4, max_weight=40)
    optimum, _ = app.knapsack_dp(**inst)
    model = app.knapsack_model(inst, mode="graph", seed=0)
    genes = np.random.default_rng(0).integers(0, 2, (64, 16)).astype("int32")
    result = model.evolve(genes, generations=100)
    check = app.knapsack_check(result.best, **inst)
    assert check["feasible"] and check["value"] == optimum == result.best_fitness


# -- continuous optimisation -----------------------------------------------------------------------------


@pytest.mark.parametrize("function", sorted(app.FUNCTIONS))
def test_gaussian_mutation_ga_descends_towards_the_origin(function):
    model = app.continuous_model(function, dims=10, mode="graph")
    bound = app.FUNCTIONS[function][1]
    result = model.evolve(app.continuous_population(function, 64, 10, seed=0), generations=120)
    assert result.best_fitness < result.history["best"][0] / 5
    assert np.abs(result.population).max() <= bound


def test_bad_application_input_is_named():
    with pytest.raises(ValueError, match="square number of cities"):
        app.cities("grid", 30)
    with pytest.raises(ValueError, match="unknown city set 'star'"):
        app.cities("star", 10)
    with pytest.raises(ValueError, match="at least 3 cities"):
        app.cities("random", 2)
    with pytest.raises(ValueError, match="two_opt needs a tour"):
        app.two_opt([0, 1, 1], app.distance_matrix(app.cities("random", 3)))
    with pytest.raises(ValueError, match="unknown crossover 'edge'; choose one of 'order', 'subtour'"):
        app.tsp_model(app.cities("random", 5), crossover="edge")
    with pytest.raises(ValueError, match="unknown mutation 'swap'"):
        app.tsp_model(app.cities("random", 5), mutation="swap")
    with pytest.raises(ValueError, match="unknown function 'sphere'"):
        app.continuous_model("sphere")
    with pytest.raises(ValueError, match=r"include\[0\] is not a tour of 5 cities"):
        app.tour_population(4, 5, include=[[0, 1, 2, 3, 3]])
    assert app.plot_landscape("ackley", points=21).get_title().startswith("ackley")


def test_result_tables_read_against_the_reference():
    xy = app.cities("grid", 16)
    d = app.distance_matrix(xy)
    nn = app.nearest_neighbour_tour(d)
    rows = app.tour_table(xy, {"nn": nn, "2-opt": app.two_opt(nn, d)}, optimum=16.0)
    assert [r["tour"] for r in rows] == ["nn", "2-opt"] and rows[1]["length"] <= rows[0]["length"]
    assert rows[0]["% above optimum"] == round(100 * (rows[0]["length"] / 16 - 1), 3)
    assert app.tour_table(xy, {"nn": nn})[0]["% above shortest"] == 0
    with pytest.raises(ValueError, match="'bad' is not a tour of 16 cities"):
        app.tour_table(xy, {"bad": np.zeros(16, int)})
    inst = app.knapsack_instance(10, seed=0, max_weight=20)
    table = app.knapsack_table(inst, {"dp": app.knapsack_dp(**inst)[1], "all": np.ones(10, int)})
    assert table[0]["% of optimum"] == 100 and table[0]["fits"]
    assert not table[1]["fits"] and table[1]["weight"] == sum(inst["weights"])


def test_time_to_quality_verdicts_read_a_ga_that_stopped_short_as_a_lower_bound():
    from course_lib.bench import Comparison, Timing

    comparison = Comparison([Timing("NN + 2-opt (NumPy)", 0.01, [0.01] * 5, 1),
                             Timing("GA", 0.5, [0.5] * 5, 1), Timing("memetic GA", 0.2, [0.2] * 5, 1)],
                            baseline="NN + 2-opt (NumPy)")
    found = {"NN + 2-opt (NumPy)": {"best": 8.0, "generations": None, "reached": True},
             "GA": {"best": 20.0, "generations": 200, "reached": False},
             "memetic GA": {"best": 7.9, "generations": 9, "reached": True}}
    ga, memetic = app.time_to_quality_verdicts(comparison, found).sentences
    assert ga.startswith("GA: at least 50") and "lower bound" in ga and "200 generations" in ga
    assert memetic == comparison.verdict("memetic GA")


def test_readings_report_the_compile_its_overrun_and_which_method_won():
    tour = np.arange(5)
    model = object()  # a GA's trace holds its model; the readings only ask whether there is one
    local = app.Trace("local search", [0.1, 0.5], [10.0, 9.0], tour, "2 descents", 0.5)
    cold = app.Trace("memetic GA", [0.5, 4.5, 5.0], [11.0, 9.5, 9.2], tour, "4 generations of 4", 5.0,
                     model=model, compile_s=3.5)
    warm = app.Trace("memetic GA, compiled", [0.1, 1.0, 2.0], [11.0, 9.1, 8.5], tour, "9 generations of 4", 3.0,
                     model=model)
    traces = {"local search": local, "memetic GA": cold, "memetic GA, compiled": warm}
    text = app.time_to_quality_reading("5 cities", traces, 3.0)
    assert "the memetic GA compiled for 3.5 s and ended its first generations at 4.5 s, 1.5 s past the budget" in text
    assert "the memetic GA did not match the local search within 3 s" in text
    assert "the memetic GA's best tour with its programs already compiled was 5.6% shorter (8.500)" in text
    won = app.time_to_quality_conclusion({"5 cities": traces}, [3.0])
    assert won == ("5 cities: the local search won within 3 s; with its programs already compiled the memetic GA "
                   "went below it after 2.0 s, so compiling (3.5 s) is what it lost by (read on the wall clock, "
                   "the GA keeping 1.0 cores busy, the local search 1.0).")
    lost = app.time_to_quality_conclusion({"5 cities": traces}, [1.5])
    assert lost.startswith("5 cities: the local search won: the memetic GA did not go below its best tour within 1.5 s")
    cold.lengths[-1] = 8.0
    assert "the memetic GA went below the local search, after 5.0 s, compile included, 3.5 s of them compiling " \
        "(read on the wall clock" in app.time_to_quality_conclusion({"5 cities": traces}, [6.0])
    assert "went below" not in app.time_to_quality_conclusion({"5 cities": {"local search": local,
                                                                            "memetic GA": cold}}, [3.0])


def test_time_to_quality_runs_the_methods_asked_for_and_reruns_compiled():
    xy = app.cities("random", 12, seed=3)
    traces = app.time_to_quality(xy, 0.2, memetic_population=4, methods=("memetic GA",), compiled=["memetic GA"])
    assert list(traces) == ["memetic GA", "memetic GA, compiled"]
    assert traces["memetic GA"].compile_s is not None and traces["memetic GA"].compile_s >= 0
    assert traces["memetic GA, compiled"].model is traces["memetic GA"].model
    with pytest.raises(ValueError, match="methods must name some of"):
        app.time_to_quality(xy, 0.2, methods=("2-opt",))
