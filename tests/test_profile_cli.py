"""`course profile MODULE:FUNCTION` writes the trace, the tables, the timeline PNG and the Chrome JSON."""

import json

from course_lib import cli

PROGRAM = '''
import tensorflow as tf

x = tf.ones([16, 16])
matmul = tf.function(lambda a: tf.reduce_sum(a @ a))


def step():
    return matmul(x)
'''


def test_course_profile_writes_every_file(tmp_path, monkeypatch, capsys):
    (tmp_path / "my_program.py").write_text(PROGRAM)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out"
    assert cli.main(["profile", "my_program:step", "--steps", "2", "--out", str(out)]) == 0
    for name in ("op_types.txt", "ops.txt", "steps.txt", "summary.json", "timeline.png", "trace.json"):
        assert (out / name).stat().st_size > 0, name
    assert list((out / "trace").glob("plugins/profile/*/*.xplane.pb"))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counters"]["steps"] == 2 and summary["hypothesis"]
    assert "MatMul" in (out / "op_types.txt").read_text()
    json.loads((out / "trace.json").read_text())
    assert summary["hypothesis"] in capsys.readouterr().out


def test_course_profile_names_a_bad_target(tmp_path, capsys):
    assert cli.main(["profile", "no_such_module_here:step", "--out", str(tmp_path)]) == 2
    assert "cannot import" in capsys.readouterr().err
    assert cli.main(["profile", "json", "--out", str(tmp_path)]) == 2
    assert "MODULE:FUNCTION" in capsys.readouterr().err
    assert cli.main(["profile", "json:__version__", "--out", str(tmp_path)]) == 2
    assert "not a callable" in capsys.readouterr().err
