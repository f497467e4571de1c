"""One headless Chromium (Debian's /usr/bin/chromium driven by Playwright) for every web test: the
browser starts once for this package, and each test opens its own pages."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright import sync_api as playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
ARTIFACTS = Path(__file__).resolve().parents[4] / "test-artifacts"

# Every module here: slow, and needs Chromium (under `make test` a missing one fails, see tests/conftest.py).
WEB = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed"),
]


@pytest.fixture(scope="package")
def browser():
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield browser
        browser.close()
