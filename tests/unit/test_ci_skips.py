"""Under CI (``CI`` set, as ``.ci/run`` does) a skip hides a missing resource, so it fails."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


@pytest.mark.parametrize(("ci", "failed", "skipped"), [("1", 1, 0), ("", 0, 1)])
def test_a_skip_fails_under_ci(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ci: str, failed: int, skipped: int
) -> None:
    monkeypatch.setenv("CI", ci)
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(
        """
        import pytest

        def test_needs_curl():
            pytest.skip("curl is not installed")

        def test_fine():
            pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=failed, skipped=skipped)
