"""The GPU-style backends `physx_cuda` and `physx_gpu_emulated` (docs/gpu.md).

Shared by both: `scene` (GpuSimScene), `views` and `pool` (batched views over the
system's buffers), `system` (the object holding the physics system). `physx_cuda`:
SAPIEN's PhysX GPU library and enabling it. The emulation of SAPIEN's PhysxGpuSystem on
CPU PhysX, with its one CPU system per sub-scene and the ground planes it copies
between them, is `emulation`, `emulation_render` and `emulation_shared`; of the
other robosim modules only `system.make_gpu_system` imports them
(tests/test_sim_boundary_static.py).
"""
