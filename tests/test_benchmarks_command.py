"""The skeleton every `course bench` command shares: options, --quick, the JSON report, the registry."""

import json

import pytest

from course_lib import bench, host
from course_lib.benchmarks import command as skeleton


@skeleton.command("toy-bench", repeats=4, quick={"size": 2, "repeats": 1},
               options={"--size": dict(type=int, default=100, help="how big")},
               check=lambda args: "--size must be even" if args.size % 2 else None)
def toy_bench(args):
    """A command measuring two variants at --size."""
    c = bench.compare({"a": lambda: args.size, "b": lambda: -args.size}, repeats=args.repeats, params=vars(args))
    return skeleton.Report([c], {"size_seen": args.size})


def test_a_command_writes_one_report_with_its_arguments_and_the_machine(tmp_path, capsys):
    out = tmp_path / "deep" / "toy.json"
    assert toy_bench(["--size", "6", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["command"] == "toy-bench" and report["size_seen"] == 6
    assert report["args"] == {"repeats": 4, "quick": False, "out": str(out), "size": 6}
    assert report["machine"] == host.machine()
    [c] = report["comparisons"]
    assert [v["name"] for v in c["variants"]] == ["a", "b"] and c["repeats"] == 4
    # more blocks while a ratio is unsettled: noise decides how many
    assert len(c["variants"][0]["times_s"]) in range(4, 4 * bench.MOST_ROUNDS + 1, 4)
    assert f"wrote {out}" in capsys.readouterr().out


def test_quick_sets_small_values_that_explicit_options_override(tmp_path):
    out = tmp_path / "toy.json"
    toy_bench(["--quick", "--json", str(out)])  # --json is --out
    args = json.loads(out.read_text())["args"]
    assert (args["quick"], args["repeats"], args["size"]) == (True, 1, 2)
    toy_bench(["--quick", "--size", "8", "--out", str(out)])
    assert json.loads(out.read_text())["size_seen"] == 8


def test_a_command_writes_through_save_report(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(skeleton, "save_report", lambda comparisons, path, **fields: calls.append((path, fields)))
    toy_bench(["--quick", "--out", str(tmp_path / "x.json")])
    assert [(path, sorted(fields)) for path, fields in calls] == [(str(tmp_path / "x.json"),
                                                                   ["args", "command", "size_seen"])]
    assert not (tmp_path / "x.json").exists()


def test_a_command_refuses_bad_options_with_usage(capsys):
    for argv, message in [(["--size", "3"], "--size must be even"),
                          (["--repeats", "0"], "must be a whole number >= 1"),
                          (["--nope"], "unrecognized arguments: --nope")]:
        with pytest.raises(SystemExit) as info:
            toy_bench(argv)
        assert info.value.code == 2
        err = capsys.readouterr().err
        assert "usage: course bench toy-bench" in err and message in err


def test_save_report_keeps_its_own_fields():
    with pytest.raises(ValueError, match=r"writes \['machine'\] itself"):
        skeleton.save_report([], "unused.json", machine="mine")


BENCH_NAMES = ["ops", "ga", "ga-replicas", "tsp", "eager-vs-graph", "gan", "xla", "tfdata", "strategies", "neuro"]


@pytest.mark.parametrize("name", BENCH_NAMES)
def test_every_course_bench_command_is_made_by_the_skeleton(name):
    from course_lib import benchmarks

    command = benchmarks.commands()[name]
    assert getattr(command, "bench_command", None) == name, f"{command.__module__} is not made by the skeleton"


def test_two_benchmarks_cannot_share_a_name():
    from course_lib import benchmarks

    benchmarks.commands()
    with pytest.raises(ValueError, match="two benchmarks are named 'ops'"):
        skeleton.command("ops")(lambda args: [])
