"""Plots inside Prefect artifacts (issue 33 point 4): the UI is an http page and shows no file://
image, so a run's PNGs go into its markdown as data: images (tasks/build/plot_markdown.py). That
Chromium renders them on the release run's page is checked in test_ui.py."""
import base64
import re

from xmdata.tasks.build import plot_markdown
from xmdata.tasks.build.plot_markdown import inline_images, plot_image, plots_section

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


def data_of(markdown: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r"\(data:image/png;base64,([A-Za-z0-9+/=]+)\)", markdown)]


def test_a_cards_relative_plots_are_put_inside_it_and_other_images_left_alone(tmp_path):
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "selection_map.png").write_bytes(PNG)
    card = ("## Images\n\n![selection map](plots/selection_map.png)\n\n![logo](https://example.org/logo.png)\n"
            "![gone](plots/qe_histogram.png)\n")
    shown = inline_images(card, str(tmp_path))
    assert data_of(shown) == [PNG] and "![selection map](data:image/png" in shown
    assert "![logo](https://example.org/logo.png)" in shown  # not ours to inline
    assert inline_images("![x](HTTPS://example.org/x.png)", str(tmp_path)) == "![x](HTTPS://example.org/x.png)"
    assert "*gone: not written*" in shown and "plots/" not in shown.replace("https://example.org", "")


def test_plots_section_and_a_plot_too_big_to_inline(tmp_path, monkeypatch):
    small, big = tmp_path / "small.png", tmp_path / "big.png"
    small.write_bytes(PNG)
    big.write_bytes(PNG + b"\0" * 64)
    monkeypatch.setattr(plot_markdown, "MAX_INLINE_BYTES", len(PNG) + 10)
    section = plots_section([str(small), str(big), str(tmp_path / "absent.png")])
    assert section.startswith("\n### Plots\n") and data_of(section) == [PNG]
    assert f"`{big}`" in section and "too big to show here" in section and "absent" not in section
    assert plots_section([str(tmp_path / "absent.png")]) == ""
    assert data_of(plot_image(str(small), "a")) == [PNG]


def test_the_release_runs_way_inside_names_the_commands_and_an_example_per_reason(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from xmdata.tasks.release.look_inside import look_inside_markdown

    out = tmp_path / "my release"
    (out / "rejects").mkdir(parents=True)
    pq.write_table(pa.table({"stage": ["geocode"] * 3, "reason": ["no_gps", "no_gps", "invalid_coordinates"],
                             "row_id": ["img-9", "img-2", None], "value": [None] * 3}), out / "rejects" / "geocode.parquet")
    pq.write_table(pa.table({"stage": pa.array([], pa.string()), "reason": pa.array([], pa.string()),
                             "row_id": pa.array([], pa.string()), "value": pa.array([], pa.string())}),
                   out / "rejects" / "pairs.parquet")
    markdown = look_inside_markdown(str(out))
    assert f"`xmdata explore '{out}'`" in markdown and f"`xmdata explain '{out}' ID`" in markdown
    assert "| geocode | invalid_coordinates | 1 | — | — |" in markdown  # a row without an id: counted
    assert f"| geocode | no_gps | 2 | img-2 | `xmdata explain '{out}' img-2` |" in markdown
    assert "No stage refused a row." in look_inside_markdown(str(tmp_path / "empty"))
