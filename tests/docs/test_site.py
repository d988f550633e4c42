"""The documentation site: generated reference pages equal to fresh ones and complete (every command,
option, release-config key, table, reject reason and setting has its entry), --help and the Prefect
deployments naming pages that exist, a short README, and `mkdocs build --strict` passing offline."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import yaml

from xmdata import docs_code_size, docs_reference
from xmdata.docs_reference import COMMANDS_PAGE, GUIDES, anchor, options, walk

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFERENCE = os.path.join(ROOT, "docs", "reference")


def page(name: str) -> str:
    return open(os.path.join(REFERENCE, name), encoding="utf-8").read()


def sections(text: str) -> dict[str, str]:
    """{heading id: the text up to the next heading} of a generated page."""
    parts = re.split(r"^#+ .*\{#([a-z0-9-]+)\}$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_the_reference_pages_are_the_ones_the_code_generates():
    for name, text in docs_reference.generate().items():
        assert page(name) == text, f"docs/reference/{name} is stale: python -m xmdata.docs_reference"


def test_every_command_and_option_has_an_entry_in_its_section():
    from xmdata.cli_parser import build_parser

    found = sections(page("commands.md"))
    commands = list(walk(build_parser()))
    assert len(commands) > 25
    for path, parser, _ in commands:
        section = found.get(anchor(path))
        assert section is not None, f"xmdata {' '.join(path)} has no section"
        for action in options(parser):
            names = ", ".join(action.option_strings) or action.metavar or action.dest
            assert f"| `{names}` |" in section, f"xmdata {' '.join(path)}: {names} has no entry"


def test_every_release_config_key_table_reason_and_setting_has_an_entry():
    from xmdata.flows.release_config import ReleaseConfig
    from xmdata.runtime import settings
    from xmdata.schemas.reasons import REASONS
    from xmdata.schemas.tables import CONTRACTS

    config = page("release-config.md")
    for name, field in ReleaseConfig.model_fields.items():
        assert f"| `{name}` |" in config
        for model in docs_reference._models_in(field.annotation):
            for key, sub in model.model_fields.items():
                assert f"| `{name}.{sub.alias or key}` |" in config, f"{name}.{key}"
    tables = sections(page("tables.md"))
    for name, contract in CONTRACTS.items():
        assert all(f"| `{f.name}` |" in tables[name.replace("_", "-")] for f in contract.schema), name
    reasons = page("reasons.md")
    assert all(f'<a id="{name}"></a>`{name}`' in reasons for name in REASONS)
    imports = sections(page("importers.md"))
    from xmdata.tasks.importers.formats import FORMATS
    assert set(FORMATS) <= set(imports)
    listed = page("settings.md")
    assert all(f"| `{s.name}` |" in listed for s in settings.ALL)


def test_a_missing_entry_fails_the_completeness_check(monkeypatch):
    """The checks above can fail: a reason added to the registry is missing from the committed page."""
    from xmdata.schemas import reasons

    extra = reasons.Reason("made_up_reason", ("language_id",), "A test's.", "Nothing.")
    monkeypatch.setitem(reasons.REASONS, extra.name, extra)
    assert docs_reference.reasons_page() != page("reasons.md")
    assert "made_up_reason" not in page("reasons.md")


def test_help_names_the_command_reference_section_and_its_guide(capsys):
    from xmdata.cli import main
    from xmdata.cli_parser import build_parser

    found = sections(page("commands.md"))
    for path, parser, _ in walk(build_parser()):
        if not path:
            continue
        epilog = parser.epilog or ""
        assert f"docs: {COMMANDS_PAGE}#{anchor(path)}" in epilog and anchor(path) in found
        for guide in re.findall(r"guide: docs/(\S+)", epilog):
            assert os.path.isfile(os.path.join(ROOT, "docs", guide)), guide
    assert set(GUIDES) == {p[0] for p, _, _ in walk(build_parser()) if len(p) == 1}
    with pytest.raises(SystemExit, match="^0$"):  # --help exits 0
        main(["translate", "--help"])
    out = capsys.readouterr().out
    assert "docs: docs/reference/commands.md#translate\nguide: docs/how-to/translate.md" in out


def test_the_prefect_deployments_name_pages_that_exist():
    deployments = yaml.safe_load(open(os.path.join(ROOT, "prefect.yaml"), encoding="utf-8"))["deployments"]
    for deployment in deployments:
        named = re.findall(r"docs/(\S+?\.md)(?:#([a-z0-9-]+))?(?=[,\s]|$)", deployment["description"])
        assert named, deployment["entrypoint"]
        for path, section in named:
            assert os.path.isfile(os.path.join(ROOT, "docs", path)), path
            if section:
                assert section in sections(page(os.path.basename(path))), section


def test_the_readme_is_short_names_the_two_commands_and_links_pages_that_exist():
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    assert len(readme.splitlines()) <= 150
    assert "./run demo" in readme and "./run test" in readme and "./run docs" in readme
    links = re.findall(r"\]\((docs/[^)#]*)", readme)
    assert len(links) > 20
    assert all(os.path.exists(os.path.join(ROOT, link)) for link in links), links


def test_the_code_size_is_counted_where_architecture_asks_for_it(tmp_path):
    """architecture.md types no line count: the build puts the counted table where the page asks."""
    architecture = open(os.path.join(ROOT, "docs", "explanation", "architecture.md"), encoding="utf-8").read()
    assert architecture.count(docs_code_size.CODE_SIZE) == 1
    filled = docs_code_size.on_page_markdown(architecture, None, {"config_file_path": os.path.join(ROOT, "mkdocs.yml")}, None)
    assert docs_code_size.CODE_SIZE not in filled and docs_code_size.code_size() in filled
    for folder in ("runtime", "service", "tests"):
        (tmp_path / folder / "sub").mkdir(parents=True)
    (tmp_path / "runtime" / "a.py").write_text("x = 1\n" * 301)
    (tmp_path / "runtime" / "sub" / "b.py").write_text("y = 2\n")
    (tmp_path / "service" / "c.py").write_text("z = 3\n" * 2)
    (tmp_path / "tests" / "test_d.py").write_text("w = 4\n" * 400)
    table = docs_code_size.code_size(str(tmp_path))
    assert "| `runtime/` | the engine | 302 | 2 |" in table and "| `service/` | the resident service | 2 | 1 |" in table
    assert "| the whole tree | every folder above but `tests/` | 304 | 3 |" in table
    assert table.endswith("Files over 300 lines, the tests aside: `runtime/a.py` (301).\n")


def _build(config: str, site: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", config, "-d", site],
                          capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.slow
def test_the_site_builds_strict_and_offline(tmp_path):
    site = tmp_path / "site"
    result = _build(os.path.join(ROOT, "mkdocs.yml"), str(site))
    assert result.returncode == 0, result.stderr[-3000:]
    html = {p: p.read_text(encoding="utf-8") for p in site.rglob("*.html")}
    css = " ".join(p.read_text(encoding="utf-8") for p in site.rglob("*.css"))
    assert len(html) > 25 and (site / "search" / "search_index.json").is_file()
    for path, text in html.items():  # nothing fetched from elsewhere: no web fonts, no CDN
        assert not re.search(r"<(script|link)[^>]+(src|href)=\"(https?:)?//", text), path
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text, path
    assert "fonts.googleapis" not in css
    assert "XMDATA_CACHE" in html[site / "reference" / "settings.html"]
    runtime = sum(docs_code_size.counted()["runtime"].values())  # the code's size, counted by the build
    assert re.search(rf"<code>runtime/</code></td>\s*<td>the engine</td>\s*<td[^>]*>{runtime:,}</td>",
                     html[site / "explanation" / "architecture.html"])
    assert "Tutorial" in html[site / "index.html"]


@pytest.mark.parametrize("broken", ["[a page](no-such-page.md)", "[a section](other.md#no-such-section)"])
def test_a_broken_link_fails_the_strict_build(tmp_path, broken):
    """The site's own validation settings, on a two-page site with one broken link or anchor."""
    config = yaml.safe_load(open(os.path.join(ROOT, "mkdocs.yml"), encoding="utf-8"))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text(f"# Home\n\n{broken}\n")
    (docs / "other.md").write_text("# Other\n\n## A section\n")
    mini = {"site_name": "t", "docs_dir": str(docs), "strict": True, "validation": config["validation"],
            "markdown_extensions": config["markdown_extensions"], "nav": ["index.md", "other.md"]}
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(mini))
    result = _build(str(tmp_path / "mkdocs.yml"), str(tmp_path / "site"))
    assert result.returncode != 0 and "WARNING" in result.stderr, result.stderr[-2000:]
    (docs / "index.md").write_text("# Home\n\n[a section](other.md#a-section)\n")
    assert _build(str(tmp_path / "mkdocs.yml"), str(tmp_path / "site")).returncode == 0


def test_every_flow_description_names_its_pages():
    """What the Prefect UI shows of a flow (its description: the docstring) names its guide and its
    reference section; every flow of a committed flows/ module."""
    import importlib

    from prefect import Flow

    tracked = subprocess.run(["git", "ls-files", "flows/*.py"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    commands = page("commands.md")
    flows = [value for rel in tracked for value in vars(importlib.import_module(
        "xmdata." + rel[:-3].replace("/", "."))).values() if isinstance(value, Flow)]
    assert len({f.name for f in flows}) >= 10
    for flow in flows:
        named = re.findall(r"docs/(\S+?\.md)(?:#([a-z0-9-]+))?", flow.description or "")
        assert len(named) >= 2, f"flow {flow.name} names no docs page"
        for path, section in named:
            assert os.path.isfile(os.path.join(ROOT, "docs", path)), path
            assert not section or f"{{#{section}}}" in commands, section


def test_the_readme_example_config_is_a_valid_release_config():
    """The "your own data" example's release.yaml holds only keys and values the release config takes."""
    from xmdata.flows.release_config import ReleaseConfig

    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    text = re.search(r"<<'EOF'\n(.*?)\nEOF", readme, flags=re.S).group(1)
    config = ReleaseConfig.model_validate(yaml.safe_load(text))
    assert config.translation.targets == ["fr", "de"] and config.scoring.clip_model == "ViT-B-32"
