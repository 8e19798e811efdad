"""The New model form (DIGITS' options and defaults, and more), shared by the
page and the API, and the smaller form of the learning rate preview.

One module per group of settings, each a form of its fields and their own
checks (``schedule``, ``run``, ``taskrun``, ``solver``, ``augmentation``,
``precision``, ``stopping``, ``network``), put together in ``newmodel``.
Everything here is torch-free: the learning rate policies and layer lists
are checked with pure-Python modules, and the trainer's catalogue (standard
networks, solvers) comes from ``networkinfo``.
"""

from .newmodel import NewModelForm
from .schedule import ScheduleForm

__all__ = ["NewModelForm", "ScheduleForm"]
