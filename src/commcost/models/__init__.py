"""Models price a schedule placed on a platform. They know nothing of algorithms.

Importing this package registers every model; ``MODELS`` maps each model's
name to its class, and the CLI builds its choices from it.
"""

from commcost.models.base import MODELS, Cost, Model, PlacedSchedule, register_model
from commcost.models import hockney, loggp, hloggp, maxrate  # noqa: F401  (registration)
from commcost.models.taulop import model as _taulop  # noqa: F401  (registration)

__all__ = ["MODELS", "Cost", "Model", "PlacedSchedule", "register_model"]
