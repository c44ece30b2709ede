"""Which Chromium the browser tests drive, on a machine with Debian's Chromium or without it."""

from __future__ import annotations

import pytest

from browser import PACKAGED_CHROMIUM, chromium_page, find_chromium

pytestmark = pytest.mark.browser


def test_without_debian_chromium_the_npm_packaged_one_is_unpacked_and_renders_a_page(
    tmp_path, monkeypatch
):
    monkeypatch.delenv("NBMEMORY_CHROMIUM", raising=False)
    packaged = tmp_path / "node_modules" / "@sparticuz" / "chromium"  # a copy, unpacked afresh
    packaged.mkdir(parents=True)
    for name in ("package.json", "bin"):
        (packaged / name).symlink_to(PACKAGED_CHROMIUM / name)
    executable = find_chromium(debian=tmp_path / "no-chromium", packaged=packaged)
    try:
        assert executable.parent.parent == tmp_path / "node_modules" / ".cache"
        assert find_chromium(debian=tmp_path / "no-chromium", packaged=packaged) == executable
        with chromium_page(300, "packaged-chromium", executable) as page:
            page.set_content("<p style='font: 20px sans-serif'>Agent Memory</p>")
            assert "HeadlessChrome/" in page.evaluate("navigator.userAgent")
            assert page.get_by_text("Agent Memory").bounding_box()["width"] > 50
    finally:
        executable.unlink()  # 200 MB: not kept among pytest's recent temporary folders


def test_nbmemory_chromium_names_the_browser_to_drive(tmp_path, monkeypatch):
    debian, mine = tmp_path / "debian-chromium", tmp_path / "my-chromium"
    for browser in (debian, mine):
        browser.write_text("#!/bin/sh\n")
        browser.chmod(0o755)
    monkeypatch.setenv("NBMEMORY_CHROMIUM", str(mine))
    assert find_chromium(debian=debian) == mine
    monkeypatch.setenv("NBMEMORY_CHROMIUM", str(tmp_path))
    with pytest.raises(pytest.fail.Exception, match="is not an executable file"):
        find_chromium(debian=debian)


def test_with_no_chromium_at_all_the_failure_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("NBMEMORY_CHROMIUM", raising=False)
    with pytest.raises(pytest.fail.Exception) as failure:
        find_chromium(debian=tmp_path / "no-chromium", packaged=tmp_path / "no-package")
    assert "apt-get install -y chromium fonts-dejavu-core" in str(failure.value)
    assert "pip install -e '.[test]'" in str(failure.value)
