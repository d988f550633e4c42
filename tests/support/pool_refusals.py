"""A bad pool given on the command line (translate or translate-qa): refused in one line, exit 2,
before any model loads and before OUT is made."""
from __future__ import annotations


def assert_refused_in_one_line(command: str, source: str, flags: list[str], message: str, tiny_models, out,
                               capsys) -> None:
    from xmdata.cli import main

    flags = [f.format(**{k: v.name_or_path for k, v in tiny_models.items()}) for f in flags]
    if "--targets" not in flags:
        flags += ["--targets", "fr"]
    assert main([command, source, "--out", str(out), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) <= 3, err  # the message, and argparse's usage lines
    assert not out.exists()
