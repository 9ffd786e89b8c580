"""robosim's ground floor: rotations and quaternions (`rotations`), atomic file writes
(`atomic`), observation/info trees with one key order (`tree`), the name registry
shared by tasks and robots (`registry`), the deprecation shims of moved names
(`deprecation`) and the version (`version`). It imports nothing from the rest of robosim
(numpy, torch and the standard library only), so every other layer may import it."""
