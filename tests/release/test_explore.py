"""RELEASE/explore/: the browsable page, built from a tiny hand-made release with the published column
names; its bytes do not depend on where the release sits; the command serves it only behind its token;
and in Chromium it opens from file://, filters, and opens a row's detail."""
import contextlib
import json
import os
import threading
import urllib.error
import urllib.request

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.required import skip_unless_required

from xmdata.runtime.settings import REQUIRE_BROWSER
from xmdata.tasks.release.explore import write_explore
from xmdata.tasks.release.manifest import verify_release, write_manifest

CHROMIUM = "/usr/bin/chromium"


def tiny_release(root) -> str:
    """Two images, three captions in two languages, a translation kept and one refused with its
    candidates, CLIPScores, and rejects of two stages: the tables as a release publishes them."""
    def write(rel, columns):
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        pq.write_table(pa.table(columns), os.path.join(root, rel))

    write("data/images.parquet", {
        "language": ["de", "en", "en"], "image_id": ["img-1", "img-1", "img-2"],
        "latitude": [52.5, 52.5, -33.9], "longitude": [13.4, 13.4, 151.2], "country": ["DE", "DE", "AU"],
        "admin1": ["Berlin", "Berlin", "NSW"], "continent": ["EU", "EU", "OC"],
        "level": ["region", "country", "region"], "strategy": ["greedy"] * 3, "seed": [0, 0, 0]})
    write("data/captions.parquet", {
        "id": ["cap-1", "cap-2", "cap-3"], "text": ["A dog on a bridge.", "Ein Hund schläft.", "A red <b>bus</b>."],
        "language": ["en", "de", "en"], "image_id": ["img-1", "img-1", "img-2"],
        "lid_label": ["en", "de", "en"], "lid_prob": pa.array([0.98, 0.91, 0.87], pa.float32())})
    unit = {"id": ["cap-1", "cap-3"], "column": ["text", "text"], "element": pa.array([None, None], pa.int32()),
            "source_text": ["A dog on a bridge.", "A red <b>bus</b>."], "target_language": ["de", "de"]}
    write("data/translations.parquet", {
        **unit, "text": ["Ein Hund auf einer Brücke.", None], "beam_rank": pa.array([1, None], pa.int32()),
        "sequence_score": pa.array([-0.5, None], pa.float32()), "lid_label": ["de", None],
        "lid_prob": pa.array([0.97, None], pa.float32()), "qe_score": pa.array([0.81, None], pa.float32()),
        "candidates": pa.array([2, 1], pa.int32()), "lid_passed": pa.array([2, 0], pa.int32()),
        "qe_quartile": pa.array([4, None], pa.int8()), "status": ["ok", "rejected"],
        "reason": [None, "no_candidate_in_target_language"]})
    write("data/translation_candidates.parquet", {
        "id": ["cap-1", "cap-1", "cap-3"], "column": ["text"] * 3, "element": pa.array([None] * 3, pa.int32()),
        "segment": pa.array([0, 0, 0], pa.int32()), "source_text": ["A dog on a bridge."] * 2 + ["A red <b>bus</b>."],
        "target_language": ["de"] * 3, "status": ["ok"] * 3,
        "candidate": ["Hund auf Brücke.", "Ein Hund auf einer Brücke.", "Un bus rouge."],
        "beam_rank": pa.array([0, 1, 0], pa.int32()), "sequence_score": pa.array([-0.7, -0.5, -0.4], pa.float32()),
        "lid_label": ["de", "de", "fr"], "lid_prob": pa.array([0.9, 0.97, 0.95], pa.float32()),
        "lid_match": [True, True, False], "qe_score": pa.array([0.6, 0.81, None], pa.float32())})
    write("data/clip_scores.parquet", {
        "id": ["cap-1", "cap-1@de", "cap-2", "cap-3"],
        "image_path": ["images/img-1.jpg", "images/img-1.jpg", "images/img-1.jpg", "images/img-2.jpg"],
        "text": ["A dog on a bridge.", "Ein Hund auf einer Brücke.", "Ein Hund schläft.", "A red <b>bus</b>."],
        "language": ["en", "de", "de", "en"], "image_id": ["img-1", "img-1", "img-1", "img-2"],
        "status": ["ok"] * 4, "error_message": [None] * 4, "clip_score": [0.71, 0.64, 0.52, 0.83],
        "ref_clip_score": pa.array([None] * 4, pa.float64()), "text_truncated": [False] * 4,
        "refs_truncated": pa.array([None] * 4, pa.bool_())})
    rejects = lambda stage, reason, ids, values: {"stage": [stage] * len(ids), "reason": reason, "row_id": ids,
                                                  "value": values}
    write("rejects/geocode.parquet", rejects("geocode", ["no_gps", "invalid_coordinates"],
                                             ["img-9", "img-8"], [None, "123.0,10.0"]))
    write("rejects/translation_selection.parquet", rejects(
        "select_translations", ["no_candidate_in_target_language"], ["cap-3"], ["text -> de"]))
    return str(root)


def read_script(path):
    """The object a data file hands the page: `window.XM_DATA={…};` or `XM_CANDIDATES("de",{…});`."""
    text = open(path, encoding="utf-8").read()
    return json.JSONDecoder().raw_decode(text, text.index("{"))[0]


def decoded(table, column):
    values = table[column]
    return [values["values"][c] if c >= 0 else None for c in values["codes"]] if isinstance(values, dict) else values


def test_explore_writes_the_same_bytes_wherever_the_release_sits_and_holds_every_row(tmp_path):
    a, b = tiny_release(tmp_path / "a"), tiny_release(tmp_path / "elsewhere" / "b")
    os.makedirs(os.path.join(b, "explore", "candidates"))
    open(os.path.join(b, "explore", "candidates", "xx.js"), "w").write("stale")  # a language since removed
    files = write_explore(a, "tiny <release>")
    assert files == ["explore/candidates/de.js", "explore/data.js", "explore/index.html"]
    assert write_explore(b, "tiny <release>") == files
    for rel in files:
        content = open(os.path.join(a, rel), "rb").read()
        assert content == open(os.path.join(b, rel), "rb").read(), rel
        assert str(tmp_path).encode() not in content  # no path of the build machine
    assert not os.path.exists(os.path.join(b, "explore", "candidates", "xx.js"))
    assert "<title>tiny &lt;release&gt; · explore</title>" in open(os.path.join(a, "explore/index.html")).read()

    data = read_script(os.path.join(a, "explore", "data.js"))
    texts, images, rejects = data["texts"], data["images"], data["rejects"]
    assert decoded(texts, "id") == ["cap-1", "", "cap-2", "cap-3", ""]  # cap-1@de, cap-3@de: the page rebuilds them
    assert decoded(texts, "language") == ["en", "de", "de", "en", "de"]
    assert decoded(texts, "clip_score") == [0.71, 0.64, 0.52, 0.83, None]
    assert decoded(texts, "reason")[4] == "no_candidate_in_target_language"
    assert texts["image"] == [0, 0, 0, 1, 1] and texts["source"] == [-1, 0, -1, -1, 3]  # row numbers
    assert "source_id" not in texts  # every source is a caption of the release
    assert decoded(texts, "stage")[4] == "select_translations"
    assert decoded(images, "image_id") == ["img-1", "img-2"]  # images are referenced by their path, never copied
    assert decoded(images, "path") == ["images/img-1.jpg", "images/img-2.jpg"]
    assert decoded(images, "selected")[0] == "de:region en:country"
    assert rejects["rows"] == 3 and sorted(decoded(rejects, "stage")) == ["geocode", "geocode", "select_translations"]

    candidates = read_script(os.path.join(a, "explore", "candidates", "de.js"))
    rows = candidates["units"]["cap-1@de"]
    column = candidates["columns"].index("candidate")
    assert [r[column] for r in rows] == ["Hund auf Brücke.", "Ein Hund auf einer Brücke."]
    assert candidates["units"]["cap-3@de"][0][candidates["columns"].index("lid_match")] is False

    write_manifest(a, {"name": "tiny"})  # the manifest lists explore/ and verify checks it
    assert set(files) <= set(json.load(open(os.path.join(a, "manifest.json")))["release"]["files"])
    assert verify_release(a) == []


def test_the_server_answers_only_under_its_token(tmp_path):
    from xmdata.commands.explore import explore_server

    release = tiny_release(tmp_path / "r")
    write_explore(release, "tiny")
    (tmp_path / "imgs" / "images").mkdir(parents=True)
    (tmp_path / "imgs" / "images" / "img-1.jpg").write_bytes(b"\xff\xd8jpeg")
    (tmp_path / "secret.txt").write_text("not the release")
    server = explore_server(release, "tok3n", 0, str(tmp_path / "imgs"))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"

    def status(path):
        try:
            with urllib.request.urlopen(base + path, timeout=10) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as exc:
            return exc.code, b""
    try:
        assert server.server_address[0] == "127.0.0.1"
        assert status("/tok3n/explore/index.html")[0] == 200
        assert status("/tok3n/_images/images/img-1.jpg") == (200, b"\xff\xd8jpeg")
        for refused in ("/explore/index.html", "/tok3nX/explore/index.html", "/x/tok3n/explore/index.html",
                        "/tok3n/", "/tok3n/../secret.txt", "/tok3n/_images/../../secret.txt"):
            assert status(refused)[0] == 404, refused
    finally:
        server.shutdown()
        server.server_close()


def test_explore_command_writes_the_page_when_missing_and_refuses_a_folder_that_is_no_release(tmp_path, capsys):
    from xmdata.cli import main

    release = tiny_release(tmp_path / "r")
    assert main(["explore", release, "--no-serve"]) == 0
    assert capsys.readouterr().out.strip() == f"file://{os.path.join(release, 'explore', 'index.html')}"
    assert os.path.exists(os.path.join(release, "explore", "candidates", "de.js"))
    assert main(["explore", str(tmp_path / "nothing"), "--no-serve"]) == 2
    assert "not a release" in capsys.readouterr().err



def test_a_release_built_before_explore_keeps_its_bytes_and_gets_the_page_beside_it(tmp_path, capsys, monkeypatch):
    """Its manifest lists no explore/: the page goes to XMDATA_CACHE, so `release verify` stays clean."""
    from xmdata.cli import main
    from xmdata.commands.explore import explore_server
    from xmdata.tasks.release.manifest import verify_release, write_manifest

    monkeypatch.setenv("XMDATA_CACHE", str(tmp_path / "cache"))
    release = tiny_release(tmp_path / "r")
    write_manifest(release, {"name": "tiny"})
    assert main(["explore", release, "--no-serve"]) == 0
    page = capsys.readouterr().out.strip().removeprefix("file://")
    assert page.startswith(str(tmp_path / "cache" / "explore")) and os.path.exists(page)
    assert not os.path.exists(os.path.join(release, "explore")) and verify_release(release) == []
    assert oct(os.stat(tmp_path / "cache" / "explore").st_mode & 0o777) == "0o700"
    server = explore_server(release, "tok3n", 0, None, os.path.dirname(page))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/tok3n/explore/data.js"
        with urllib.request.urlopen(url, timeout=10) as answer:
            assert answer.read() == open(os.path.join(os.path.dirname(page), "data.js"), "rb").read()
    finally:
        server.shutdown()
        server.server_close()


def needs_chromium():
    if not os.path.exists(CHROMIUM):
        skip_unless_required(f"{CHROMIUM} missing (apt-get install chromium)", REQUIRE_BROWSER)


def write_photos(folder):
    """images/img-1.jpg (red) and images/img-2.jpg (blue), 40x30, under FOLDER."""
    from PIL import Image

    (folder / "images").mkdir(parents=True)
    for n, colour in ((1, "red"), (2, "blue")):
        Image.new("RGB", (40, 30), colour).save(folder / "images" / f"img-{n}.jpg")


@contextlib.contextmanager
def page_in_chromium(release, errors):
    """RELEASE's explore page opened from file:// in Debian's Chromium, ready; page errors go to ERRORS."""
    from playwright.sync_api import sync_playwright
    from support.prefect_ui import launch_chromium

    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(f"file://{release}/explore/index.html")
            page.wait_for_selector("body[data-ready='1']")
            yield page
        finally:
            browser.close()


@pytest.mark.browser
def test_the_page_filters_by_language_and_opens_a_rows_detail_in_chromium(tmp_path):
    needs_chromium()
    from xmdata.commands.explore import explore_server

    release = tiny_release(tmp_path / "r")
    write_explore(release, "tiny")
    write_photos(tmp_path / "photos")
    server = explore_server(release, "tok3n", 0, str(tmp_path / "photos"))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    errors = []
    try:
        with page_in_chromium(release, errors) as page:
            assert page.locator("#count").get_attribute("data-n") == "2"  # images
            assert page.locator("svg.map circle").count() == 2
            page.click("nav button[data-tab=texts]")
            assert page.locator("#rows tbody tr").count() == 5
            page.select_option("#f-lang", "de")
            page.wait_for_function("document.querySelector('#count').dataset.n === '3'")
            assert page.locator("#rows tbody tr").count() == 3
            page.select_option("#f-stage", "select_translations")
            page.wait_for_function("document.querySelector('#count').dataset.n === '1'")
            page.select_option("#f-stage", "")
            page.locator("#rows tbody tr", has_text="cap-1@de").click()  # follow the row to its explanation
            page.wait_for_function("document.querySelector('#detail').dataset.key === 'text/cap-1@de'")
            detail = page.locator("#detail")
            detail.locator("table.cands").wait_for()  # candidates/de.js, loaded on demand
            assert detail.locator("tr.chosen").inner_text().count("Ein Hund auf einer Brücke.") == 1
            assert "xmdata explain RELEASE cap-1" in detail.inner_text()
            detail.get_by_role("link", name="img-1").click()
            page.wait_for_function("document.querySelector('#detail').dataset.key === 'image/img-1'")
            assert "region" in detail.inner_text()
            shot = tmp_path / "explore.png"
            page.screenshot(path=str(shot), full_page=True)

            # Served, with the image folder beside it: the thumbnails are the referenced files.
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/tok3n/explore/index.html?images=../_images/")
            page.wait_for_selector("body[data-ready='1']")
            page.wait_for_function("[...document.querySelectorAll('img.thumb')].length === 2 && "
                                   "[...document.querySelectorAll('img.thumb')].every(i => i.complete && i.naturalWidth === 40)")
    finally:
        server.shutdown()
        server.server_close()
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    assert errors == []


def _embedded_release(tmp_path):
    """tiny_release with its two photographs inside clip_scores and captions (embed_images)."""
    from xmdata.tasks.release.embed_images import ImageSources, embed_release_images

    release = tiny_release(tmp_path / "r")
    write_photos(tmp_path / "photos")
    sources = ImageSources(by_id={f"img-{n}": (f"images/img-{n}.jpg", str(tmp_path / "photos" / "images" / f"img-{n}.jpg"))
                                  for n in (1, 2)}, roots={"clip_scores": str(tmp_path / "photos")})
    done = embed_release_images(release, ["clip_scores", "captions", "translations"], sources, None)
    assert set(done) == {"clip_scores", "captions"}
    return release


def test_a_release_with_its_images_inside_carries_them_to_the_page_and_one_without_is_unchanged(tmp_path):
    from xmdata.tasks.release.explore_page import page_html

    plain = tiny_release(tmp_path / "plain")
    assert "images.js" not in write_explore(plain, "tiny")[0] + "".join(write_explore(plain, "tiny"))
    assert open(os.path.join(plain, "explore", "index.html")).read() == page_html("tiny")
    release = _embedded_release(tmp_path)
    assert "explore/images.js" in write_explore(release, "tiny")
    images = read_script(os.path.join(release, "explore", "images.js"))
    assert sorted(images) == ["images/img-1.jpg", "images/img-2.jpg"]
    assert images["images/img-1.jpg"].startswith("data:image/jpeg;base64,")


def test_thumbnails_skip_bytes_that_are_no_image_and_tell_one_path_in_two_tables_apart(tmp_path):
    import base64
    import io

    from PIL import Image

    from xmdata.tasks.release.embed_images import IMAGE_TYPE
    from xmdata.tasks.release.explore import embedded_thumbnails

    def png(colour):
        out = io.BytesIO()
        Image.new("RGB", (8, 8), colour).save(out, "PNG")
        return out.getvalue()

    release = tmp_path / "r"
    (release / "data").mkdir(parents=True)
    red, blue, green = png((255, 0, 0)), png((0, 0, 255)), png((0, 255, 0))
    # the same relative path under two tables' folders: two images; the page's paths are clip_scores'
    pq.write_table(pa.table({"id": ["q"], "image": pa.array([{"bytes": blue, "path": "a.png"}], IMAGE_TYPE)}),
                   release / "data" / "aa_qa.parquet")
    pq.write_table(pa.table({"image_path": ["a.png", "bad.png"], "image": pa.array(
        [{"bytes": red, "path": "a.png"}, {"bytes": b"no image here", "path": "bad.png"}], IMAGE_TYPE)}),
        release / "data" / "clip_scores.parquet")
    for n, colour in (("x", blue), ("y", green)):  # two other tables disagree on b.png: shown by neither
        pq.write_table(pa.table({"image": pa.array([{"bytes": colour, "path": "b.png"}], IMAGE_TYPE)}),
                       release / "data" / f"{n}.parquet")
    thumbs = embedded_thumbnails(str(release))
    assert sorted(thumbs) == ["a.png"]  # bad.png: no image, skipped, no traceback
    assert base64.b64decode(thumbs["a.png"].split(",", 1)[1]) == red


@pytest.mark.browser
def test_the_page_shows_each_rows_picture_from_the_embedded_bytes_in_chromium(tmp_path):
    needs_chromium()
    import shutil

    release = _embedded_release(tmp_path)
    write_explore(release, "tiny")
    shutil.rmtree(tmp_path / "photos")  # no image folder: the pictures are the release's own
    errors = []
    with page_in_chromium(release, errors) as page:
        page.wait_for_function("[...document.querySelectorAll('img.thumb')].length === 2 && "
                               "[...document.querySelectorAll('img.thumb')].every(i => i.complete && i.naturalWidth === 40)")
        assert "set the image folder" not in page.inner_text("body")
    assert errors == []
