"""A real headless browser for the HTML report tests: Debian's Chromium driven through ChromeDriver (selenium).

:func:`load` opens a file, returns what the browser saw: console messages
of level SEVERE (script errors, resources that failed to load), the images
with their loaded sizes, and a PNG screenshot of the page. Tests skip when
Chromium, ChromeDriver or selenium is missing, except under CI (.ci/run
installs all three and sets COMMCOST_REQUIRE_BROWSER).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def available() -> bool:
    """Whether a headless browser can run here."""
    if importlib.util.find_spec("selenium") is None:
        return False
    return Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()


# CI sets COMMCOST_REQUIRE_BROWSER=1: there a missing browser fails these tests instead of skipping them
needs_browser = pytest.mark.skipif(not available() and not os.environ.get("COMMCOST_REQUIRE_BROWSER"),
                                   reason="needs chromium, chromium-driver (Debian) and selenium")


@dataclass
class Seen:
    """What the browser made of a page."""

    errors: list[dict]
    images: list[tuple[bool, int, int]]  # complete, natural width, natural height
    title: str
    text: str
    screenshot: bytes


def load(path: Path, width: int = 1280, height: int = 2000) -> Seen:
    """Open ``path`` in headless Chromium (no network needed: a file URL) and report what it saw."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}"):
        options.add_argument(arg)
    options.binary_location = CHROMIUM
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.get(path.resolve().as_uri())
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.naturalHeight])")
        text = driver.execute_script("return document.body.innerText")
        errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        return Seen(errors, [tuple(i) for i in images], driver.title, text, driver.get_screenshot_as_png())
    finally:
        driver.quit()


def external_references(text: str) -> list[str]:
    """Everything in a page that a browser would fetch from elsewhere (a self-contained page has none)."""
    import re

    refs = re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', text)
    out = [r for r in refs if not r.startswith(("data:", "#"))]
    out += re.findall(r"<script|<link|@import|url\(", text)
    return out


def png_content(png: bytes) -> tuple[int, float]:
    """(distinct colours, share of pixels that are not white) of a PNG: a blank page has 1 and 0."""
    import io

    import numpy as np
    from matplotlib.image import imread

    pixels = (imread(io.BytesIO(png), format="png")[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
    distinct = len(np.unique(pixels.view([("", np.uint8)] * 3)))
    return distinct, float(np.mean(np.any(pixels < 250, axis=1)))
