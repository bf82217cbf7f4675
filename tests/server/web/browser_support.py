"""Browser tests' helpers: a room server in a thread, headless Chromium driven by Selenium.

Chromium and its driver are Debian's (``apt-get install chromium chromium-driver``); without
them the browser tests skip, saying why. Every wait is bounded.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import pytest
import uvicorn
from mcp_support import ADMIN, free_port, house_resolver

from dealroom.protocol import RoomCreated, RoomRequest
from dealroom.server.mcp_http import build_http_app, uvicorn_config
from dealroom.server.rooms import RoomRegistry
from dealroom.store.results import ResultsStore
from dealroom.store.writer import ResultWriter

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--window-size=1200,1000",
)
WAIT_S = 10.0
"""Longest any one thing the tests wait for may take."""

T = TypeVar("T")


def needs_browser() -> pytest.MarkDecorator:
    """Skip (saying why) where Debian's chromium or chromium-driver is not installed."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    try:
        import selenium  # noqa: F401  (an optional test dependency: checked, not used here)
    except ImportError:
        missing.append("selenium (pip)")
    return pytest.mark.skipif(bool(missing), reason=f"browser tests need {', '.join(missing)}")


@dataclass
class ThreadServer:
    """A room server running in a background thread."""

    url: str
    registry: RoomRegistry

    def create(self, **request: Any) -> RoomCreated:
        """Open a room through the admin API."""
        body = RoomRequest(**request).model_dump(mode="json", exclude_defaults=True)
        response = httpx2.post(
            f"{self.url}/admin/rooms",
            json=body,
            headers={"Authorization": f"Bearer {ADMIN}"},
            timeout=WAIT_S,
        )
        assert response.status_code == 201, response.text
        return RoomCreated.model_validate(response.json())


@contextmanager
def server_thread(tmp_path: Path) -> Iterator[ThreadServer]:
    """``dealroom serve --transport http`` on a free loopback port, in a thread."""
    port = free_port()
    box: dict[str, Any] = {}
    ready = threading.Event()

    def run() -> None:
        with ResultsStore(tmp_path / "results.db") as store:
            registry = RoomRegistry(writer=ResultWriter(store), resolve_house=house_resolver)
            app = build_http_app(registry, admin_token=ADMIN, host="127.0.0.1", port=port)
            config = uvicorn_config(app, host="127.0.0.1", port=port, timeout_graceful_shutdown=1)
            box["server"] = uvicorn.Server(config)
            box["registry"] = registry
            ready.set()
            box["server"].run()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(WAIT_S), "the server thread did not start"
    server: uvicorn.Server = box["server"]
    until(lambda: server.started, "the server to start")
    try:
        yield ThreadServer(f"http://127.0.0.1:{port}", box["registry"])
    finally:
        server.should_exit = True
        thread.join(timeout=WAIT_S)


@contextmanager
def chromium() -> Iterator[Any]:
    """Headless Chromium with a fresh profile, driven by Debian's chromedriver."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="dealroom-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(WAIT_S)
    driver.set_script_timeout(WAIT_S)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def until(check: Callable[[], T | bool | None], what: str, timeout: float = WAIT_S) -> T:
    """Poll ``check`` until it returns something truthy; fail saying ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)
