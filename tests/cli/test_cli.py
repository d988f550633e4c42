import os
import subprocess
import sys


from xmdata.cli import main
from xmdata.data import sample_path

XMDATA = os.path.join(os.path.dirname(sys.executable), "xmdata")


def test_help_is_light():
    heavy = ("torch", "prefect", "dask", "transformers", "polars", "pyarrow", "numpy", "PIL")
    code = "import sys; from xmdata.cli import build_parser; build_parser().format_help(); " \
           f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert subprocess.run([XMDATA, "--help"], capture_output=True).returncode == 0


def test_broken_input_exits_2_names_file_column_rows_and_writes_nothing(tmp_path, capsys):
    bad = tmp_path / "captions.csv"
    bad.write_text("id,caption\na,hello\n")
    out = tmp_path / "out"
    assert main(["identify-language", str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "captions.csv" in err and "'text'" in err and "required column is missing" in err
    assert not out.exists()


def test_missing_file_exits_2(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "none.jsonl")]) == 2
    assert "file not found" in capsys.readouterr().err


def test_validate_reports_mistyped_rows(tmp_path, capsys):
    path = tmp_path / "images.csv"
    path.write_text("id,latitude,longitude\na,1,2\nb,far,3\n")
    assert main(["validate", str(path), "--table", "images"]) == 2
    assert "id='b'" in capsys.readouterr().err


def test_broken_language_areas_exit_2_before_anything_is_written(tmp_path, capsys):
    areas = tmp_path / "areas.json"
    areas.write_text('{"languages": {"hi": {"regions": ["IN/Atlantis"], "countries": ["IN"], "continents": ["AS"]}}}')
    out = tmp_path / "out"
    assert main(["select-images", sample_path("images.csv"), "--languages", str(areas), "--out", str(out)]) == 2
    assert "'IN/Atlantis'" in capsys.readouterr().err
    assert not out.exists()
