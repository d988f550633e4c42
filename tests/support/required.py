"""A test whose setup this machine lacks: skipped on a developer's machine, failed where a setting says
the machine has it (CI: .ci/run sets XMDATA_REQUIRE_BROWSER=1 and XMDATA_REQUIRE_ROOT_TESTS=1)."""
from __future__ import annotations

from typing import NoReturn

import pytest

from xmdata.runtime.settings import Setting


def skip_unless_required(reason: str, required: Setting) -> NoReturn:
    if required.get():
        pytest.fail(f"{reason} ({required.name}=1: this machine must run it)")
    pytest.skip(reason)
