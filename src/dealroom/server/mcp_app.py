"""The MCP surface of one seat: tools, resources and the briefing prompt.

The same surface serves every transport: stdio house mode, seats of HTTP rooms and the seat
proxy. Which seat a call acts for comes from ``seat()``, which the transport supplies (the
launch arguments on stdio, the bearer token over HTTP), never from a tool argument.

The tools are derived from ``dealroom.protocol.tools`` (names, titles, argument schemas,
annotations); their descriptions are rendered from the seat's room rules each time the tools
are listed. Every result carries the model-facing text of ``dealroom.protocol.seat_text`` as
its text content and the JSON as ``structuredContent``. Every error, argument validation
included, is one ``code: sentence. hint.`` line with the code first: refusals are returned as
error results (never raised, which mcp would prefix with ``Error executing tool X:``), and a
tool validates its arguments itself before mcp's own validation could answer with a pydantic
dump.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Annotated, Any, assert_never

import structlog
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    CallToolResult,
    GetPromptResult,
    InputRequiredResult,
    ListToolsResult,
    PromptMessage,
    TextContent,
    ToolAnnotations,
)
from mcp.types import Tool as MCPTool

from dealroom._version import __version__
from dealroom.protocol import (
    DEFAULT_RULES,
    ActionResult,
    SeatState,
    SessionErrorCode,
    WaitResult,
    seat_text,
)
from dealroom.protocol.arguments import WaitArgs, action_of
from dealroom.protocol.compact_schema import compact_schema
from dealroom.protocol.market_seat import market_tools, seller_tools
from dealroom.protocol.rules import Rules
from dealroom.protocol.tools import (
    ArgumentError,
    ResultKind,
    SeatTool,
    seat_tools,
    validate_arguments,
)
from dealroom.server.gone import while_connected
from dealroom.server.market_seats import ServedMarketSeller
from dealroom.server.seat import CallRefused, ServedSeat

log = structlog.stdlib.get_logger(__name__)

SeatProvider = Callable[[], ServedSeat | ServedMarketSeller]
"""The seat the current call acts for: a bilateral seat or a market's buyer (``ServedSeat``),
or a market's seller, which is served the market seller's tools instead."""

OBSERVATION_URI = "dealroom://seat/observation"
TRANSCRIPT_URI = "dealroom://seat/transcript"
MODEL_TOOLS_URI = "dealroom://seat/model_tools"
"""The seat's tools as the one model seat offers them to a model (``model_seat.tools``: OpenAI
function schemas in name order, one negotiation's tools), which ``tools/list`` does not give:
its schemas are MCP's, with the long descriptions. For a harness that runs the model's loop
itself (the verifiers integration) and must send the model what the ``llm:`` seat sends."""

INSTRUCTIONS = """You hold one seat (buyer or seller) in a one-item negotiation run by this \
server. Read the `briefing` prompt first: it tells you the item, your own private value and \
the rules. Offers made with make_offer are binding; messages are cheap talk. After acting, call \
wait_for_opponent to hear the other side. Never reveal your private value. Where the server \
plays a series, new_negotiation starts the next negotiation once one has ended, and get_state \
shows your results so far."""

_RESULT_MODELS: dict[ResultKind, type[ActionResult | WaitResult | SeatState]] = {
    "action": ActionResult,
    "wait": WaitResult,
    "state": SeatState,
}


@functools.cache
def _output_schemas() -> dict[ResultKind, dict[str, Any]]:
    return {kind: compact_schema(model) for kind, model in _RESULT_MODELS.items()}


def _text_result(text: str, structured: dict[str, Any]) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=structured
    )


def _error_result(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _unknown_tool(name: str, offered: Iterable[str]) -> CallToolResult:
    payload = seat_text.unknown_tool(name, offered)
    log.info("tool refused", tool=name[:64], code=payload.code)
    return _error_result(payload.text())


class _SeatTool(Tool):
    """A tool that validates its arguments itself (strictly, with a one-line coded error)."""

    spec: Annotated[Any, "SeatTool"] = None

    async def run(
        self, arguments: dict[str, Any], context: Context[Any, Any], convert_result: bool = False
    ) -> Any:
        try:
            validate_arguments(self.spec, arguments)
        except ArgumentError as error:
            log.info("tool refused", tool=self.name, code=error.payload.code)
            return _error_result(error.payload.text())
        run = super().run
        reply = await while_connected(
            _request_of(context), lambda: run(arguments, context, convert_result=convert_result)
        )
        return (
            _error_result("The client has gone; nothing reads this reply.")
            if reply is None
            else reply
        )


def _request_of(context: Context[Any, Any]) -> object:
    """The HTTP request that brought a call (None over stdio, or outside a request)."""
    try:
        return context.request_context.request
    except ValueError:
        return None


async def render(seat: ServedSeat, result: ActionResult | WaitResult | SeatState) -> str:
    """A tool result's model-facing text (``seat_text``), as every surface shows it."""
    match result:
        case SeatState():
            return seat_text.state_text(result)
        case ActionResult() | WaitResult():
            role, currency = await seat.viewer()
            return seat_text.update_text(result, role, currency)
        case _:
            assert_never(result)


async def _respond(seat: ServedSeat, spec: SeatTool, args: Any) -> CallToolResult:
    """One call of a tool whose arguments are valid: its text and JSON, or its refusal."""
    with structlog.contextvars.bound_contextvars(**seat.log_context, tool=spec.name):
        try:
            result = await dispatch(seat, spec, args)
        except CallRefused as error:
            log.info("tool refused", code=error.payload.code)
            return _error_result(error.payload.text())
        text = await render(seat, result)
        return _text_result(text, result.model_dump(mode="json"))


def _function(seat: SeatProvider, spec: SeatTool) -> Callable[..., Awaitable[CallToolResult]]:
    """The tool's function: its signature is the spec's argument model, field by field."""

    async def call(**arguments: Any) -> CallToolResult:
        served = seat()
        if isinstance(served, ServedMarketSeller):  # its tools of the same name take a buyer
            return await _market_call(served, spec.name, arguments)
        return await _respond(served, spec, spec.args.model_validate(arguments))

    parameters = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Annotated[(info.annotation, info)],
            **({} if info.is_required() else {"default": info.default}),
        )
        for name, info in spec.args.model_fields.items()
    ]
    call.__signature__ = inspect.Signature(parameters, return_annotation=CallToolResult)  # type: ignore[attr-defined]
    call.__name__ = spec.name
    return call


async def dispatch(
    seat: ServedSeat, spec: SeatTool, args: Any
) -> ActionResult | WaitResult | SeatState:
    """Make one seat tool call with its validated arguments (every surface calls the seat
    through here: the MCP tools and the web seat page)."""
    match spec.result:  # by kind, not by name: a new action tool needs nothing here
        case "action":
            action = action_of(args)
            assert action is not None
            return await seat.act(action)
        case "wait":
            assert isinstance(args, WaitArgs)
            return await seat.wait(args.timeout_s)
        case "state" if spec.name == "new_negotiation":
            return await seat.new_negotiation()
        case "state":
            return await seat.state()
        case _:
            assert_never(spec.result)


def _annotations(spec: SeatTool) -> ToolAnnotations:
    hints = spec.hints
    if hints.read_only:
        return ToolAnnotations(title=spec.title, read_only_hint=True)
    return ToolAnnotations(title=spec.title, destructive_hint=hints.destructive)


def _build(seat: SeatProvider, spec: SeatTool) -> _SeatTool:
    tool = _SeatTool.from_function(  # from_function builds cls(...): a _SeatTool
        _function(seat, spec),
        name=spec.name,
        title=spec.title,
        description=spec.description(DEFAULT_RULES),
        annotations=_annotations(spec),
    )
    assert isinstance(tool, _SeatTool)
    tool.spec = spec
    # Published: the result's schema cut to its top level, with its title and its offer and
    # outcome items (compact_schema; tools/list stays small). Checked before sending: every
    # result against its full model (mcp validates structured content against output_model).
    # Set here rather than through the return annotation, which would have mcp generate the
    # full schema of each tool's model only to replace it.
    tool.fn_metadata.output_model = _RESULT_MODELS[spec.result]
    tool.fn_metadata.output_schema = _output_schemas()[spec.result]
    return tool


@functools.cache
def _tool_templates(series: bool) -> dict[str, _SeatTool]:
    """The tools built once per process: their schemas and argument models (pydantic's schema
    generation, the bulk of building an app) do not depend on the seat."""

    def unbound() -> ServedSeat:
        raise RuntimeError("a template tool is never called")

    return {spec.name: _build(unbound, spec) for spec in seat_tools(series=series)}


def mcp_tools(seat: SeatProvider, *, series: bool = True) -> list[Tool]:
    """The seat's tools, acting for ``seat()``: the shared templates bound to its functions."""
    templates = _tool_templates(series)
    return [
        templates[spec.name].model_copy(update={"fn": _function(seat, spec)})
        for spec in seat_tools(series=series)
    ]


class SeatServer(MCPServer):
    """An MCP server whose tool descriptions are rendered from the calling seat's rules, whose
    unknown tools are refused as ``unknown_tool`` lines like every other refusal, and whose
    prompt requests fail as invalid params (-32602, one log line) when they name an
    unknown prompt or pass arguments, instead of an internal error and a traceback."""

    def __init__(self, seat: SeatProvider, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._seat = seat

    async def list_tools(self) -> list[MCPTool]:
        """The tools, each described under the rules of the seat's room (a market's seller:
        the market seller's tools)."""
        seat = self._seat()
        if isinstance(seat, ServedMarketSeller):
            return market_mcp_tools(seat.rules.rules, series=seat.offers_series)
        return _described(await super().list_tools(), await seat.tool_descriptions())

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Any = None
    ) -> CallToolResult | InputRequiredResult:
        seat = self._seat()
        if isinstance(seat, ServedMarketSeller):
            return await _market_call(seat, name, arguments)
        if self._tool_manager.get_tool(name) is None:
            return _unknown_tool(name, [t.name for t in self._tool_manager.list_tools()])
        return await super().call_tool(name, arguments, context)

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Any = None
    ) -> Any:
        known = [p.name for p in await self.list_prompts()]
        if name not in known:
            problem = f"unknown prompt {name[:64]!r}; prompts: {', '.join(known)}"
        elif arguments:
            problem = f"the {name} prompt takes no arguments (got {', '.join(list(arguments)[:5])})"
        else:
            return await super().get_prompt(name, arguments, context)
        log.info("prompt refused", prompt=name[:64])
        raise MCPError(INVALID_PARAMS, problem)


def market_mcp_tools(rules: Rules, *, series: bool = False) -> list[MCPTool]:
    """The market seller's tools as ``tools/list`` lists them, in name order: each one's
    schema and summary from ``market_seat.market_tools`` (their one home; ``new_negotiation``
    among them where the room plays a series)."""
    listed: list[MCPTool] = []
    specs = seller_tools(series=series)
    for schema in market_tools(rules, series=series):
        function = schema["function"]
        spec = specs[function["name"]]
        listed.append(
            MCPTool(
                name=spec.name,
                title=spec.title,
                description=function["description"],
                input_schema=function["parameters"],
                annotations=_annotations(spec),
            )
        )
    return listed


async def _market_call(
    seat: ServedMarketSeller, name: str, arguments: Mapping[str, Any] | None
) -> CallToolResult:
    with structlog.contextvars.bound_contextvars(**seat.log_context, tool=name[:64]):
        text, view = await seat.call(name, arguments or {})
        if view is None:
            log.info("tool refused", code=text.partition(":")[0])
            return _error_result(text)
        return _text_result(text, view)


def _described(tools: list[MCPTool], descriptions: Mapping[str, str]) -> list[MCPTool]:
    return [
        t.model_copy(update={"description": descriptions.get(t.name, t.description)}) for t in tools
    ]


async def _or_mcp_error(read: Awaitable[str]) -> str:
    """A resource's or prompt's text; a refusal (the seat proxy's) becomes an MCP error with its
    line, code first, not a traceback: a refused seat token an invalid request (it will not
    pass), anything else (``upstream_unavailable``) an internal error (for now)."""
    try:
        return await read
    except CallRefused as error:
        code = error.payload.code
        log.info("read refused", code=code)
        rpc = INVALID_REQUEST if code == SessionErrorCode.SEAT_TOKEN_REFUSED else INTERNAL_ERROR
        raise MCPError(rpc, error.payload.text()) from None


_BRIEFING = (
    "Your briefing: role, item, your private value, rules, deadline, how to use the tools and "
    "what counts as success."
)


def add_resources_and_prompt(app: MCPServer, seat: SeatProvider) -> None:
    """Add the seat's resources and briefing prompt to ``app`` (its tools: ``mcp_tools``)."""

    @app.resource(
        OBSERVATION_URI,
        name="observation",
        description="Your seat's current observation (JSON): never the other side's value.",
        mime_type="application/json",
    )
    async def observation() -> str:
        return await _or_mcp_error(seat().observation_json())

    @app.resource(
        TRANSCRIPT_URI,
        name="transcript",
        description="The negotiation so far as your seat sees it, one line per event.",
        mime_type="text/plain",
    )
    async def transcript() -> str:
        return await _or_mcp_error(seat().transcript())

    @app.resource(
        MODEL_TOOLS_URI,
        name="model_tools",
        description="Your tools as a model is offered them (JSON: OpenAI function schemas, "
        "in name order), for a harness that runs its model's tool loop itself.",
        mime_type="application/json",
    )
    async def model_tools() -> str:
        return await _or_mcp_error(seat().model_tools())

    @app.prompt(name="briefing", description=_BRIEFING)
    async def briefing() -> str:
        return await _or_mcp_error(seat().briefing())


def build_app(
    seat: SeatProvider, *, name: str = "dealroom", series: bool = True, **kwargs: Any
) -> MCPServer:
    """An MCP server for one kind of seat (``kwargs`` go to ``MCPServer``)."""
    tools = mcp_tools(seat, series=series)
    app = SeatServer(
        seat,
        name,
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        tools=tools,
        **kwargs,
    )
    add_resources_and_prompt(app, seat)
    return app


class DirectSession:
    """One seat's MCP surface called as functions in this process, without the protocol.

    The same tool list (schemas, descriptions under the room's rules), the same results (text
    content and ``structuredContent``), the same refusals and the same briefing as an MCP
    client of ``build_app(lambda: seat, series=series)`` gets, built by the same code;
    ``tests/test_surface_parity.py`` checks them byte for byte. What it leaves out is the wire:
    no JSON-RPC, no session, no JSON round trip, no client-side output-schema validation. For
    players in the room's own process (local matches, tournaments), where those cost more CPU
    than the negotiation itself. Its methods are those of ``mcp.Client`` that seats use.
    """

    def __init__(self, seat: ServedSeat, *, series: bool = True) -> None:
        self._seat = seat
        self._series = series
        self._specs = {spec.name: spec for spec in seat_tools(series=series)}

    async def list_tools(self) -> ListToolsResult:
        """The tools, as ``tools/list`` lists them."""
        listed = await MCPServer.list_tools(_template_app(self._series))
        return ListToolsResult(tools=_described(listed, await self._seat.tool_descriptions()))

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        """One tool call, as ``tools/call`` answers it (refusals are error results)."""
        spec = self._specs.get(name)
        if spec is None:
            return _unknown_tool(name, self._specs)
        try:
            args = validate_arguments(spec, arguments or {})
        except ArgumentError as error:
            log.info("tool refused", tool=name, code=error.payload.code)
            return _error_result(error.payload.text())
        return await _respond(self._seat, spec, args)

    async def get_prompt(self, name: str) -> GetPromptResult:
        """The briefing prompt (the only prompt)."""
        if name != "briefing":
            raise MCPError(INVALID_PARAMS, f"unknown prompt {name[:64]!r}; prompts: briefing")
        text = await _or_mcp_error(self._seat.briefing())
        message = PromptMessage(role="user", content=TextContent(type="text", text=text))
        return GetPromptResult(description=_BRIEFING, messages=[message])


@functools.cache
def _template_app(series: bool) -> MCPServer:
    """An app whose tools are the templates: what ``tools/list`` lists, before descriptions."""
    return MCPServer("templates", log_level="WARNING", tools=list(_tool_templates(series).values()))
