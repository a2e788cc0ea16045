"""The ``course`` command: lectures, bench, exercises, check, profile, doctor."""

from __future__ import annotations

import argparse
import json
import os
import sys


def _lectures(args) -> int:
    from course_lib import exercises, lectures

    params = dict(args.param or [])
    folders = [lectures.NOTEBOOKS] + ([lectures.SOLUTIONS] if args.solutions or args.in_place else [])
    try:
        if args.twice:  # the lectures twice, the second run in place with --in-place; then the solutions
            outcomes, changes, path = lectures.run_twice(args.only, params, in_place=args.in_place)
            _report_twice(changes, path)
            if folders[1:]:
                outcomes += lectures.run(args.only, params, in_place=args.in_place, folders=folders[1:])
        else:
            outcomes = lectures.run(args.only, params, in_place=args.in_place, folders=folders)
    except ValueError as exc:
        print(f"course lectures: {exc}", file=sys.stderr)
        return 2
    failed = [o for o in outcomes if not o.ok]
    if args.in_place:
        exercises.build()
        print("rebuilt exercises/ from solutions/")
    elif not args.twice:
        index = lectures.write_index([o for o in outcomes if o.lecture.path.parent == lectures.NOTEBOOKS])
        print(f"index: {index}")
    if failed:
        print(f"{len(failed)} of {len(outcomes)} notebook(s) failed:", file=sys.stderr)
        for o in failed:
            print(f"  {o.lecture.path.parent.name}/{o.lecture.path.name}: {o.error}", file=sys.stderr)
        return 1
    print(f"all {len(outcomes)} notebook(s) ran")
    return 0


def _report_twice(changes, path) -> None:
    """``course lectures --twice``: every verdict that changed between the two runs on this machine."""
    for change in changes:
        print(change)
    report = json.loads(path.read_text())
    print(f"{report['changed']} of {report['verdicts']} verdict(s) changed between the two runs, "
          f"{report['contradicted']} of them to one the other run ruled out (details: {path})")
    if "explanations" in report:  # every other sentence the cells render, figures masked
        said = report["explanations"]
        print(f"{said['changed']} of {said['sentences']} explanation sentence(s) changed, "
              f"{said['contradicted']} of them to a different claim")
    if report["failed"]:
        print(f"failed in a run, so not compared: {', '.join(report['failed'])}", file=sys.stderr)


def _bench(args, rest: list[str]) -> int:
    from course_lib import benchmarks

    commands = benchmarks.commands()
    if args.name not in commands:
        print(f"course bench: unknown benchmark {args.name!r}; choose one of: {', '.join(sorted(commands))}",
              file=sys.stderr)
        return 2
    return int(commands[args.name](rest) or 0)


def _exercises(args) -> int:
    from course_lib import exercises

    if args.action == "build":
        for path in exercises.build():
            print(f"wrote {path.relative_to(exercises.ROOT)}")
        return 0
    problems = exercises.check()
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print("exercises/ is out of date: run `course exercises build`", file=sys.stderr)
        return 1
    print("exercises/ is in sync with solutions/")
    return 0


def _check(args) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # the checkers import TensorFlow: no INFO lines
    from course_lib import grading

    try:
        report = grading.grade_notebook(args.notebook)
    except grading.GradingError as exc:
        print(f"course check: {exc}", file=sys.stderr)
        return 2
    print(report.table())
    return 0 if report.ok else 1


def kernel_registered(name: str = "tf-perf-course") -> str | None:
    """The folder of the course's Jupyter kernel, or None when it is not registered."""
    from jupyter_client.kernelspec import KernelSpecManager

    return KernelSpecManager().find_kernel_specs().get(name)


def _doctor(args) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    from course_lib import host

    info = host.machine()
    kernel = kernel_registered()
    report = dict(info, kernel=kernel or "not registered (run `make kernel`)", executable=sys.executable)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            print(f"{key:>12}: {', '.join(value) if isinstance(value, list) else value}")
        print(f"\n{host.machine_summary(info)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="course", description="The TensorFlow performance course.")
    sub = parser.add_subparsers(dest="command", required=True)

    lec = sub.add_parser("lectures", help="execute the lectures with papermill into build/lectures/")
    lec.add_argument("--only", nargs="+", metavar="NN", help="only these lecture numbers")
    lec.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
                     help="override a parameter of the notebooks' parameters cell")
    lec.add_argument("--solutions", action="store_true", help="execute solutions/ too")
    lec.add_argument("--in-place", action="store_true",
                     help="execute notebooks/ and solutions/ in place (to commit them) and rebuild exercises/")
    lec.add_argument("--twice", action="store_true",
                     help="run the lectures twice (into build/lectures/twice/; with --in-place the second run "
                          "in place) and list the verdicts that changed")

    b = sub.add_parser("bench", help="run a benchmark and write its JSON")
    b.add_argument("name", help="the benchmark (a module of course_lib/benchmarks; an unknown name lists them)")

    ex = sub.add_parser("exercises", help="generate exercises/ from solutions/ or check they are in sync")
    ex.add_argument("action", choices=["build", "check"])

    chk = sub.add_parser("check", help="grade an exercise notebook (run in a scratch copy; exit 1 unless all pass)")
    chk.add_argument("notebook", help="exercises/NN_topic.ipynb or your copy of it")

    prof = sub.add_parser("profile", help="profile a zero-argument callable: trace, tables, timeline PNG, Chrome JSON")
    prof.add_argument("target", help="MODULE:FUNCTION, a callable taking no arguments that runs one step")
    prof.add_argument("--steps", type=int, default=3, help="profiled calls (default 3)")
    prof.add_argument("--warmup", type=int, default=1, help="unprofiled calls before (default 1)")
    prof.add_argument("--out", default="build/profiles/course-profile", help="output folder")

    doc = sub.add_parser("doctor", help="versions, CPU features, devices, kernel registration")
    doc.add_argument("--json", action="store_true")

    args, rest = parser.parse_known_args(argv)
    if args.command != "bench" and rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.command == "lectures":
        return _lectures(args)
    if args.command == "bench":
        return _bench(args, rest)
    if args.command == "exercises":
        return _exercises(args)
    if args.command == "check":
        return _check(args)
    if args.command == "profile":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
        from course_lib.profile import report

        return report.run(args.target, steps=args.steps, warmup=args.warmup, out=args.out)
    return _doctor(args)


if __name__ == "__main__":
    sys.exit(main())
