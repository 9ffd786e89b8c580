"""robosim's built-in task plugins (import name `robosim_tasks`)."""
