"""What Inspect AI loads through dealroom's ``inspect_ai`` entry point: ``dealroom/bargain``."""

from dealroom.harnesses.inspect_task import bargain

__all__ = ["bargain"]
