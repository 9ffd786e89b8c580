"""robosim's built-in task plugins (import name `robosim_tasks`).

Each module registers its task with `robosim.register_task`; setup.cfg also lists them
under the `robosim.tasks` entry point group, which is how `robosim.list_tasks()` finds
them without importing them."""
from robosim_tasks import pick_cube, pick_object, push_cube, reach, stack_cube  # noqa: F401
from robosim_tasks import open_drawer, push_t  # noqa: F401
