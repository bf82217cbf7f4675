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
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
import pytest
import uvicorn
from mcp_support import ADMIN, free_port, house_resolver

from dealroom.protocol import RoomCreated, RoomRequest
from dealroom.server.mcp_http import build_http_app, uvicorn_config
from dealroom.server.rooms import RoomRegistry, SellerResolver
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
def server_thread(
    tmp_path: Path, *, reap: bool = False, resolve_seller: SellerResolver | None = None
) -> Iterator[ThreadServer]:
    """``dealroom serve --transport http`` on a free loopback port, in a thread; with ``reap``,
    its reaper too (wall clocks' deadlines, a study's dropouts and timeouts), as served; with
    ``resolve_seller``, market rooms' house sellers."""
    port = free_port()
    box: dict[str, Any] = {}
    ready = threading.Event()

    async def serve(server: uvicorn.Server, registry: RoomRegistry) -> None:
        async with anyio.create_task_group() as group:
            if reap:
                group.start_soon(registry.reap)
            await server.serve()
            group.cancel_scope.cancel()

    def run() -> None:
        with ResultsStore(tmp_path / "results.db") as store:
            registry = RoomRegistry(
                writer=ResultWriter(store),
                resolve_house=house_resolver,
                resolve_seller=resolve_seller,
            )
            app = build_http_app(registry, admin_token=ADMIN, host="127.0.0.1", port=port)
            config = uvicorn_config(app, host="127.0.0.1", port=port, timeout_graceful_shutdown=1)
            box["server"] = uvicorn.Server(config)
            box["registry"] = registry
            ready.set()
            anyio.run(serve, box["server"], registry)

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


AXE = ("axe_selenium_python", "node_modules/axe-core/axe.min.js")
"""Where axe-core's script is: bundled by the axe-selenium-python wheel (the test extra), so
the accessibility check runs offline."""

_AXE_RUN = """
const done = arguments[arguments.length - 1];
axe.run(document, { resultTypes: ["violations"] })
  .then((r) => done({ version: axe.version, violations: r.violations.map((v) => ({
    id: v.id, impact: v.impact,
    nodes: v.nodes.map((n) => n.target.join(" ") + ": " + n.failureSummary) })) }))
  .catch((e) => done({ error: String(e) }));
"""


def axe_script() -> str | None:
    """axe-core's script, or None where axe-selenium-python is not installed."""
    try:
        return resources.files(AXE[0]).joinpath(AXE[1]).read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        return None


def needs_axe() -> pytest.MarkDecorator:
    """Skip (saying why) where axe-core's script is not installed."""
    return pytest.mark.skipif(
        axe_script() is None, reason="the accessibility check needs axe-selenium-python (pip)"
    )


IMPACTS = ("minor", "moderate", "serious", "critical")


def axe_violations(driver: Any, impacts: tuple[str, ...] = IMPACTS) -> list[str]:
    """axe-core's violations of ``impacts`` on the page as it is now, one line each (all of
    axe's default rules: WCAG 2 A and AA, best practices). Run through WebDriver, which the
    page's content security policy does not govern."""
    if not driver.execute_script("return typeof axe !== 'undefined'"):
        driver.execute_script(axe_script())
    result = driver.execute_async_script(_AXE_RUN)
    assert "error" not in result, result
    return [
        f"{v['id']} ({v['impact']}): {node}"
        for v in result["violations"]
        if v["impact"] in impacts
        for node in v["nodes"]
    ]


_SVG_CONTRAST = """
const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
const lum = (c) => {
  const f = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
  const [r, g, b] = rgb(c);
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
};
const background = (node) => {
  for (; node; node = node.parentElement) {
    const c = getComputedStyle(node).backgroundColor, parts = rgb(c);
    if (parts.length === 3 || parts[3] > 0) return c;
  }
  return "rgb(255, 255, 255)";
};
const low = [];
for (const svg of document.querySelectorAll("svg")) {
  if (!svg.getClientRects().length) continue;
  const back = lum(background(svg));
  for (const text of svg.querySelectorAll("text")) {
    const fore = lum(getComputedStyle(text).fill);
    const ratio = (Math.max(fore, back) + 0.05) / (Math.min(fore, back) + 0.05);
    if (ratio < 4.5) low.push(text.textContent + ": " + ratio.toFixed(2));
  }
}
return low;
"""


def svg_text_contrast(driver: Any) -> list[str]:
    """The shown SVG texts (a chart's labels) whose contrast with the chart's background is
    below 4.5:1: axe-core leaves text inside SVG unchecked ("incomplete")."""
    return list(driver.execute_script(_SVG_CONTRAST))
