"""course bench moo is registered under its name."""

from course_lib import benchmarks
from course_lib.benchmarks import moo


def test_the_command_is_registered():
    assert benchmarks.commands()["moo"] is moo.bench_moo
    assert moo.bench_moo.bench_command == "moo"
