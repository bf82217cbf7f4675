"""Draw the README's picture: the room page after an ordinary negotiation, in headless Chromium.

    python docs/readme_picture.py [OUT.png]        # default: docs/images/web-room-deal.png

Serves rooms over HTTP in this process (the browser tests' server, on a free loopback port, with
a temporary results store), opens a room whose seller is the house agent ``conceder`` on the
secret pinned below, opens the room's spectator page in Debian's headless Chromium (the
browser tests' own driver: ``tests/server/web/browser_support.py``), plays the buyer with the
scripted ``linear`` agent as an MCP client, and saves the page once it shows the deal. Needs the
test extra and ``apt-get install chromium chromium-driver``; ``tests/server/web/
test_readme_picture.py`` runs it. Prints the outcome it drew.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "server"), str(ROOT / "tests/server/web")]

import anyio  # noqa: E402
from browser_support import chromium, server_thread, until  # noqa: E402

from dealroom import resolve  # noqa: E402
from dealroom._logging import configure_logging  # noqa: E402
from dealroom.protocol import DEFAULT_RULES  # noqa: E402
from dealroom.protocol.secret import Secret  # noqa: E402
from dealroom.sdk import ScriptedPlayer, SeatClient, SeatContext  # noqa: E402

SECRET = "9c2f4e71b0a86d35e1f7c4a2d9b03e68"
"""A published secret (a server refuses the README's patterned one): in the mid tier's first
scenario ``dealroom match --buyer linear --seller conceder`` makes a deal inside the zone."""
WIDTH = 1200


async def play_buyer(url: str, token: str) -> dict[str, Any]:
    """The scripted ``linear`` buyer, as an MCP client of the room; the seat's outcome."""
    player = ScriptedPlayer(resolve("linear"), "linear")
    context = SeatContext(role="buyer", rules=DEFAULT_RULES, seed=Secret.from_hex(SECRET))
    async with SeatClient.http(f"{url}/mcp", token) as seat:
        await player.play(seat, context)
        outcome = (await seat.get_state()).observation.outcome
    assert outcome is not None, "the buyer stopped before the end"
    return outcome.model_dump(mode="json")


def draw(out: Path) -> dict[str, Any]:
    """Play the negotiation with its room page open, and save the page after the deal."""
    with (
        tempfile.TemporaryDirectory() as store,
        server_thread(Path(store)) as server,
        chromium() as driver,
    ):
        created = server.create(house_seller="conceder", tier="mid", secret=SECRET)
        driver.get(f"{server.url}/web/room#token={created.spectator}")
        status = lambda: driver.find_element("id", "status").text  # noqa: E731
        until(lambda: status() == "live", "the room page to go live")
        outcome = anyio.run(play_buyer, server.url, created.tokens["buyer"])
        shown = lambda: "Deal at" in driver.find_element("id", "outcome").text  # noqa: E731
        until(shown, "the deal on the page")
        height = driver.execute_script("return document.body.scrollHeight")
        driver.set_window_size(WIDTH, min(int(height) + 140, 2200))
        driver.execute_script("window.scrollTo(0, 0)")
        out.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(out))
    return outcome


def main() -> None:
    configure_logging()  # the server's logs go to stderr, as dealroom serve's do
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs/images/web-room-deal.png"
    outcome = draw(out)
    said = f"{outcome['status']} at {outcome['price']}, buyer surplus {outcome['surplus']}"
    sys.stdout.write(f"{out}: {said}\n")


if __name__ == "__main__":
    main()
