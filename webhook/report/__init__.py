"""Node-level GPU visibility: allocatable, allocated and free devices, waste and its cost."""
