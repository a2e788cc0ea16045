from course_lib import bench, checks, plotting


def test_check_passes_and_fails_without_raising(capsys):
    assert checks.check("ok", lambda: None, hint="h")
    assert "✓ ok: correct." in capsys.readouterr().out

    def wrong():
        raise AssertionError("one is not two")

    r = checks.check("wrong", wrong, hint="add one")
    assert not r and "not yet. one is not two Hint: add one" in r.message

    def stub():
        raise NotImplementedError

    assert "not answered yet" in checks.check("stub", stub, hint="h").message

    def missing():
        return undefined_name  # noqa: F821

    assert "not answered yet" in checks.check("missing", missing, hint="h").message

    def crash():
        raise KeyError("k")

    assert "raised KeyError" in checks.check("crash", crash, hint="h").message


def test_figures_draw():
    c = bench.compare({"a": lambda: sum(range(1000)), "b": lambda: 1}, repeats=2, title="t")
    ax = plotting.speedup_bars(c)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    ax = plotting.timeline([{"lane": "t1", "label": "read", "start": 0, "end": 1},
                            {"lane": "t2", "label": "map", "start": 0.5, "end": 2}])
    assert len(ax.collections) == 2
    ax = plotting.fitness_history({"best": [1, 2, 3], "mean": [0, 1, 2], "std": [1, 1, 1]})
    assert len(ax.lines) == 2
    ax = plotting.throughput_bars(["x", "y"], [10.0, 100.0], unit="img/s", log=True)
    assert ax.get_xscale() == "log"
