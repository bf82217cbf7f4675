"""dealroom inside the harnesses researchers already run.

- ``dealroom.harnesses.inspect_task``: an Inspect AI task (``inspect eval dealroom/bargain``),
  installed with ``pip install 'dealroom[inspect]'``;
- ``dealroom.harnesses.openenv_env``: an OpenEnv environment (``dealroom openenv serve``),
  installed with ``pip install 'dealroom[openenv]'``.

verifiers cannot share dealroom's environment (it pins ``mcp==2.0.0`` and ``openai<3``): its
environment is a distribution of its own, ``integrations/verifiers``. docs/harnesses.md says
what maps to what in each.

Every harness builds ``dealroom.play.settings.PlaySettings`` and plays the one model seat
(``dealroom.protocol.model_seat``): the model reads what it reads on every other surface.
"""
