"""robosim's built-in task plugins (import name `robosim_tasks`).

Importing this package registers all the built-in tasks (each module registers its task
with `robosim.register_task`); setup.cfg lists the same ids under the `robosim.tasks`
entry point group, which is how `robosim.list_tasks()` finds them without importing them."""
from robosim_tasks import (  # noqa: F401  (importing registers each task)
    fetch_pick_cube,
    lift_peg_upright,
    open_drawer,
    peg_insertion_side,
    pick_cube,
    pick_object,
    place_sphere,
    poke_cube,
    pull_cube,
    push_cube,
    push_t,
    reach,
    roll_ball,
    rotate_cube_in_hand,
    rotate_valve,
    so100_handover,
    stack_cube,
    stack_pyramid,
    turn_knob,
    two_arm_handover,
    two_arm_lift,
    two_arm_reach,
)
